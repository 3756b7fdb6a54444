"""A plan's live reads start while later specs compile, on a real kube-apiserver: the plan
uses each of them (no read twice) and decides exactly as a plan that reads everything itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
from ftspec.reconciler.backend import Desired, Prefetcher
from ftspec.reconciler.backends import BackendOptions, get_backend
from ftspec.reconciler.desired import prepare
from ftspec.reconciler.inputs import states
from ftspec.reconciler.kubernetes.resources import MANAGED_KINDS
from helpers.kubecli import prepare_namespace, run_cli, spec_copy, use_cluster

pytestmark = pytest.mark.kube


@pytest.fixture
def specs(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[SpecInput]:
    use_cluster(monkeypatch, kube_cluster)
    monkeypatch.setenv("FTSPEC_KUBE_RETRIES", "2")
    prepare_namespace(kube_cluster, kube_namespace)
    paths = [spec_copy(tmp_path, f"job{i}.yaml", {"name: llama32-1b-alpaca-lora": f"name: job-{i}"})
             for i in range(3)]
    applied = run_cli(capsys, "apply", *map(str, paths[:2]), "-n", kube_namespace,
                      "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    return [SpecInput(p, sets=(f"metadata.namespace={kube_namespace}",)) for p in paths]


def test_prefetched_reads_are_used_once_and_decide_the_same(specs: list[SpecInput]) -> None:
    prepared = prepare(specs, BackendOptions())
    assert prepared.ok and isinstance(prepared.backend, Prefetcher), prepared.diagnostics
    backend: Any = prepared.backend
    plan = backend.plan(prepared.desired)
    # the CRD, one LIST per managed kind in the namespace, and for the third object (not
    # applied, so not listed) a GET and a dry-run; the two applied objects, unchanged since
    # applied, need no dry-run (``drift.unchanged_since_applied``): nothing is read twice;
    # the preflight's GETs of what the three specs reference (namespace, runtime, secret,
    # claim), once for all of them; for each of the two live TrainJobs, a GET of the JobSet the
    # Trainer renders (runtime drift; this server serves none, so no runtime read follows)
    assert backend.transport.round_trips == 1 + len(MANAGED_KINDS["kubeflow"]) + 1 + 1 + 4 + 2
    assert [c.action.value for c in plan.changes] == ["no-op", "no-op", "create"]

    # the same plan, every read made by plan() itself
    plain: Any = get_backend("kubernetes", BackendOptions())
    first = [compile_spec(s, "identity", CompileOptions(schema="on-error")) for s in specs]
    opts = plain.compile_options([c.job for c in first], CompileOptions(schema="on-error"))
    plain.drop_prefetched()  # the LIST compile_options started: plan() lists anew
    desired = [Desired(c.job, c.artifacts, str(c.source.path), c.doc,
                       inputs=states(c.job, Path.cwd()))  # what prepare reads too
               for c in (compile_spec(f, "artifacts", opts) for f in first)]
    again = plain.plan(desired)
    assert _without_reads(again.to_json()) == _without_reads(plan.to_json())


def test_failed_compile_drops_the_prefetched_reads(specs: list[SpecInput],
                                                   tmp_path: Path) -> None:
    """The last spec fails only at its target's checks, after the others' reads started."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(specs[0].path.read_text(encoding="utf-8").replace(
        "name: job-0", "name: job-bad").replace(
        "    split: train\n", "    split: train\n    new_system_prompt: 'key=value'\n", 1),
        encoding="utf-8")
    prepared = prepare([*specs, SpecInput(bad, sets=specs[0].sets)], BackendOptions())
    assert not prepared.ok
    assert [d.code for d in prepared.diagnostics if d.is_error], prepared.diagnostics
    assert any(d.path[-1:] == ("new_system_prompt",) for d in prepared.diagnostics if d.is_error)
    backend: Any = prepared.backend
    assert backend is not None and backend._early is None
    assert backend.transport.round_trips >= 2  # the CRD and the early LIST went out


def _without_reads(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without resourceVersion-based digests of reads made at other moments."""
    return {k: v for k, v in plan.items() if k != "read_digests"}


WARM_PLAN = """\
import sys
from ftspec.cli.main import main
code = main(["plan", *sys.argv[1:]])
heavy = ("ftspec.spec.model", "pydantic", "celpy", "lark", "ftspec.compiler.time_cost")
print("IMPORTED", [m for m in heavy if m in sys.modules], "EXIT", code)
"""


def test_a_plan_of_unchanged_live_objects_validates_no_spec_and_builds_no_cel_parser(
        specs: list[SpecInput], tmp_path: Path) -> None:
    """The warm path a user repeats most: every spec unchanged since compiled and applied.
    The Job comes from the compile cache with its spec kept as text, the objects are
    unchanged since applied (no dry-run, no CRD rule to check) and no run starts (no time
    to predict), so the plan imports neither pydantic's spec model nor cel-python."""
    import os
    import subprocess
    import sys
    import time

    env = {**os.environ, "FTSPEC_COMPILE_CACHE": "on", "FTSPEC_CACHE_DIR": str(tmp_path / "c")}
    argv = [str(s.path) for s in specs[:2]] + ["--set", specs[0].sets[0]]
    for spec in specs[:2]:  # written a while ago: a compile of a file changed within the
        past = time.time() - 10  # same second is never kept (compiler/cache.py: racy)
        os.utime(str(spec.path), (past, past))
    for _ in range(2):  # the first fills the compile cache (the suite runs with it off)
        proc = subprocess.run([sys.executable, "-c", WARM_PLAN, *argv], capture_output=True,
                              text=True, check=False, env=env)
    assert proc.stdout.strip().endswith("IMPORTED [] EXIT 0"), proc.stdout + proc.stderr
    assert "No changes" in proc.stdout
