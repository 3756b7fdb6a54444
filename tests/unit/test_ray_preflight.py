"""The Ray backend's plan-time resource preflight (``reconciler.ray.preflight``), on payloads
recorded from the real Ray 2.60 head of the test harness (``data/ray_api/``) and on variants
of them: what no node can hold is an error at the spec field that asks for it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.ray.backend import submission
from ftspec.reconciler.ray.preflight import Cluster, check, cluster_of
from ftspec.spec.diagnostics import Diagnostic, Severity

DATA = Path(__file__).parent / "data" / "ray_api"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny-local.yaml"


def recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def head_nodes() -> Any:
    return recorded("nodes_cpu_head.json")


def with_nodes(*totals: dict[str, float], dead: int = 0) -> Any:
    """The recorded answer with its one node replaced by nodes with these totals."""
    payload = head_nodes()
    (row,) = payload["data"]["result"]["result"]
    rows = []
    for i, total in enumerate(totals):
        rows.append({**copy.deepcopy(row), "node_id": f"n{i}", "resources_total": total})
    rows += [{**copy.deepcopy(row), "state": "DEAD", "resources_total": {"GPU": 64.0}}] * dead
    payload["data"]["result"]["result"] = rows
    return payload


def desired(tmp_path: Path, resources: str, extra: str = "") -> Desired:
    """examples/tiny-local.yaml on deploy.target ray, with ``resources`` for its block."""
    text = EXAMPLE.read_text().replace("file://.ftspec", "file:///srv/.ftspec").replace(
        "global_batch_size: 4 ", "global_batch_size: 96").replace(  # divisible by 8 and 12
        "num_examples: 64", "num_examples: 960")  # GPUs; rows for 10 steps of 96
    head, _, _ = text.partition("resources:\n")
    _, _, tail = text.partition("output:\n")
    tail = tail.replace("target: local", "target: ray")
    spec = tmp_path / "ray.yaml"
    spec.write_text(f"{head}resources:\n{resources}\noutput:\n{tail}"
                    f"  ray: {{address: 'http://127.0.0.1:8265'}}\n{extra}")
    compiled = compile_spec(SpecInput(spec), "artifacts", CompileOptions(schema="on-error"))
    assert compiled.ok, [d.format() for d in compiled.errors]
    assert compiled.job is not None
    return Desired(job=compiled.job, artifacts=compiled.artifacts, spec_file=str(spec),
                   doc=compiled.doc)


def run(d: Desired, cluster: Cluster) -> list[Diagnostic]:
    found: list[Diagnostic] = check(d, submission(d), cluster)
    return found


def line_of(d: Desired, needle: str) -> int:
    lines = Path(d.spec_file).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


GPU8 = "  gpus_per_node: 8\n  accelerator: nvidia-a100-80gb"


def test_recorded_head_is_one_alive_cpu_node() -> None:
    cluster = cluster_of(head_nodes(), recorded("cluster_status_no_autoscaler.json"))
    assert len(cluster.nodes) == 1
    assert cluster.nodes[0]["CPU"] == 2.0 and "GPU" not in cluster.nodes[0]
    assert cluster.autoscaler is None


def test_cpu_spec_fits_the_recorded_head(tmp_path: Path) -> None:
    d = desired(tmp_path, "  gpus_per_node: 0")
    assert run(d, cluster_of(head_nodes(), None)) == []


def test_gpus_on_a_cpu_cluster_is_an_error_at_gpus_per_node(tmp_path: Path) -> None:
    d = desired(tmp_path, GPU8)
    found = run(d, cluster_of(head_nodes(), None))
    by_summary = {f.summary: f for f in found}
    gpu = by_summary["the cluster's nodes have GPU 0; the job needs 8"]
    assert gpu.severity is Severity.ERROR and gpu.path == ("resources", "gpus_per_node")
    assert gpu.span is not None and gpu.span.line == line_of(d, "gpus_per_node: 8")
    acc = by_summary["the cluster's nodes have accelerator_type:A100 0; the job needs 0.001"]
    assert acc.path == ("resources", "accelerator")
    assert acc.span is not None and acc.span.line == line_of(d, "accelerator: nvidia-a100")
    assert all(f.code == "preflight.ray-resource" for f in found)


def test_gpu_node_of_another_model_misses_the_accelerator_only(tmp_path: Path) -> None:
    d = desired(tmp_path, GPU8)
    nodes = with_nodes({"CPU": 64.0, "GPU": 8.0, "accelerator_type:H100": 1.0})
    (only,) = run(d, cluster_of(nodes, None))
    assert only.path == ("resources", "accelerator")
    assert "accelerator_type:A100 0" in only.summary


def test_fitting_gpu_node_plans_clean_and_dead_nodes_do_not_count(tmp_path: Path) -> None:
    d = desired(tmp_path, GPU8)
    fits = {"CPU": 64.0, "GPU": 8.0, "accelerator_type:A100": 1.0}
    assert run(d, cluster_of(with_nodes(fits), None)) == []
    (err,) = run(d, cluster_of(with_nodes({"CPU": 8.0}, dead=3), None))[:1]
    assert err.summary == "the cluster's nodes have GPU 0; the job needs 8"


def test_multi_node_needs_as_many_fitting_nodes(tmp_path: Path) -> None:
    d = desired(tmp_path, "  nodes: 3\n  gpus_per_node: 4\n  accelerator: nvidia-a100-80gb")
    node = {"CPU": 16.0, "GPU": 4.0, "accelerator_type:A100": 1.0}
    small = {"CPU": 16.0, "GPU": 2.0, "accelerator_type:A100": 1.0}
    (err,) = run(d, cluster_of(with_nodes(node, node, small), None))
    assert err.path == ("resources", "nodes")
    assert err.summary == ("2 of the cluster's 3 alive node(s) can hold a node of this run "
                           "(CPU 1, GPU 4, accelerator_type:A100 0.001); the job needs 3, "
                           "one per node (STRICT_SPREAD)")
    assert err.span is not None and err.span.line == line_of(d, "nodes: 3")
    assert run(d, cluster_of(with_nodes(node, node, node), None)) == []


def test_roce_and_cpus_per_node_are_located(tmp_path: Path) -> None:
    d = desired(tmp_path, "  nodes: 2\n  gpus_per_node: 2\n  accelerator: nvidia-a100-80gb",
                "  ray_nodes:\n    cpus: 12\n    roce: {enabled: true}\n")
    node = {"CPU": 8.0, "GPU": 2.0, "accelerator_type:A100": 1.0}
    nodes = with_nodes(node, node)
    found = {f.path: f.summary for f in run(d, cluster_of(nodes, None))}
    assert found == {
        ("deploy", "ray_nodes", "cpus"): "the cluster's nodes have CPU 8; the job needs 12 "
                                         "per node",
        ("deploy", "ray_nodes", "roce", "enabled"): "the cluster's nodes have RoCE 0; the job "
                                                    "needs 1 per node",
    }


def test_resources_split_over_nodes_is_an_error(tmp_path: Path) -> None:
    d = desired(tmp_path, GPU8)
    nodes = with_nodes({"CPU": 8.0, "GPU": 8.0}, {"CPU": 8.0, "accelerator_type:A100": 1.0})
    (err,) = run(d, cluster_of(nodes, None))
    assert err.summary.startswith("no node of the cluster has all of GPU 8, ")
    assert err.path == ("resources", "gpus_per_node")


def test_an_autoscaler_makes_them_warnings_saying_what_was_assumed(tmp_path: Path) -> None:
    status = recorded("cluster_status_plain_head.json")
    status["data"]["autoscalingStatus"] += "\n - gpu-a100: 0/4"
    d = desired(tmp_path, GPU8)
    found = run(d, cluster_of(head_nodes(), status))
    assert found and all(f.severity is Severity.WARNING for f in found)
    assert found[0].hint is not None and "worker node types gpu-a100: 0/4" in found[0].hint
    assert "assumed it can start a node that fits" in found[0].hint


def test_a_plain_heads_monitor_report_is_no_autoscaler(tmp_path: Path) -> None:
    """Recorded from the harness's head once its monitor reported: a status text with no
    worker node types, and the head's own shape in loadMetricsReport.nodeTypes."""
    status = recorded("cluster_status_plain_head.json")
    assert status["data"]["autoscalingStatus"].endswith("Worker node types:")
    assert status["data"]["clusterStatus"]["loadMetricsReport"]["nodeTypes"]
    assert cluster_of(head_nodes(), status).autoscaler is None
    d = desired(tmp_path, GPU8)
    found = run(d, cluster_of(head_nodes(), status))
    assert found and all(f.is_error for f in found)


def test_no_alive_node_is_a_warning(tmp_path: Path) -> None:
    d = desired(tmp_path, GPU8)
    (warn,) = run(d, cluster_of(with_nodes(dead=2), None))
    assert warn.severity is Severity.WARNING and "no alive node" in warn.summary


@pytest.mark.parametrize("payload", [None, [], {"data": {}}, {"data": {"result": {"result": 3}}},
                                     "<html>"])
def test_malformed_nodes_answer_is_a_value_error(payload: Any) -> None:
    with pytest.raises(ValueError, match="data.result.result"):
        cluster_of(payload, None)


@pytest.mark.slow
def test_unreadable_api_is_a_plan_warning_not_an_error(tmp_path: Path) -> None:
    from ftspec.reconciler.ray.backend import RayBackend

    d = desired(tmp_path, GPU8)
    backend = RayBackend("http://127.0.0.1:9", timeout_s=0.2)  # nothing listens on port 9
    assert backend.preflight(d) == []
    (warning,) = backend._warnings
    assert "could not be read" in warning and "not checked" in warning
