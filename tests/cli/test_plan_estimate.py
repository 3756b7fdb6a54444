"""Time and cost in ``plan`` and ``explain``: the runs a plan starts are predicted and
summed (a sweep's points), the view draws one line from the same data ``plan --json``
carries, ``--pricing`` adds a cost, and a wrong pricing file is one located error."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ftspec.cli.output import plain_markup
from ftspec.cli.plan_estimate import plan_estimate
from ftspec.cli.render_plan import render_plan
from ftspec.compiler.build import build_job
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.model import Action, Change, Plan
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from helpers.ftspec_proc import as_json, ftspec
from helpers.jobs import spec_data

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"


def gpu_job(name: str, lr: float) -> Job:
    """helpers.jobs' LoRA spec on 4 A100s, named ``name`` (its spec id)."""
    data = spec_data(metadata={"name": name}, training={"learning_rate": lr},
                     data={"train": {"num_examples": 1000}})
    return build_job(spec_from_data(data))


def _create(spec_id: str) -> dict[str, Any]:
    return {"address": f"kubeflow.trainjob.ml/{spec_id}", "action": "create",
            "after": {"spec_id": spec_id}}


def test_a_sweep_plan_sums_its_started_runs() -> None:
    a, b = gpu_job("a", 1e-4), gpu_job("b", 2e-4)
    desired = [Desired(a, (), "s.yaml"), Desired(b, (), "s.yaml")]
    est = plan_estimate(desired, [_create("a"), _create("b")], {"nvidia-a100-80gb": 3.0})
    assert est is not None and est["total"] is not None
    runs = est["runs"]
    assert [r["spec_id"] for r in runs] == ["a", "b"]
    assert est["total"]["device_hours"] == pytest.approx(sum(r["device_hours"] for r in runs),
                                                         abs=2e-3)
    assert est["total"]["cost"] == pytest.approx(3.0 * est["total"]["device_hours"], abs=0.01)
    assert "for 2 runs in turn" in est["line"] and "cost ~" in est["line"]


def test_a_run_the_plan_does_not_start_is_not_counted() -> None:
    a, b = gpu_job("a", 1e-4), gpu_job("b", 2e-4)
    noop = {"address": "kubeflow.trainjob.ml/b", "action": "no-op", "after": {"spec_id": "b"}}
    est = plan_estimate([Desired(a, (), "s.yaml"), Desired(b, (), "s.yaml")],
                        [_create("a"), noop], None)
    assert est is not None and [r["spec_id"] for r in est["runs"]] == ["a"]
    assert est["total"]["cost"] is None and "cost" not in est["line"]
    assert plan_estimate([Desired(b, (), "s.yaml")], [noop], None) is None


def test_the_plan_view_draws_the_line_under_the_summary() -> None:
    plan = Plan(backend="kubernetes", changes=(
        Change(address="kubeflow.trainjob.ml/a", action=Action.CREATE, before=None,
               after={"spec_id": "a"}),))
    data = plan.to_json()
    data["estimate"] = plan_estimate([Desired(gpu_job("a", 1e-4), (), "s.yaml")],
                                     data["changes"], None)
    lines = plain_markup(render_plan(data)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Plan: 1 to add"))
    assert lines[at + 1].startswith("time: ~") and "device-hours" in lines[at + 1], lines


@pytest.mark.slow
def test_explain_gives_time_and_cost_with_pricing(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("nvidia-a100-80gb: 2\n")
    env = dict(os.environ)
    data = as_json(ftspec(tmp_path, env, "explain", str(EXAMPLE), "--json",
                          "--pricing", str(prices)))
    time = data["time"]
    assert time["seconds_range"][0] < time["seconds"] < time["seconds_range"][1]
    assert time["cost"] == pytest.approx(time["device_hours"] * 2, abs=0.01)
    plain = as_json(ftspec(tmp_path, env, "explain", str(EXAMPLE), "--json"))
    assert plain["time"]["cost"] is None and plain["time"]["seconds"] == time["seconds"]
    text = ftspec(tmp_path, env, "explain", str(EXAMPLE), "--pricing", str(prices)).stdout
    assert "FLOPs per token" in text and "cost" in text


@pytest.mark.slow
def test_a_wrong_pricing_file_is_one_located_error(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("nvidia-a100-80gb: 2\nnvidia-b300: 9\n")
    done = ftspec(tmp_path, dict(os.environ), "explain", str(EXAMPLE), "--pricing", str(prices))
    assert done.returncode == 1
    assert f"{prices}:2:1: error: unknown accelerator 'nvidia-b300'" in done.stderr
    done = ftspec(tmp_path, dict(os.environ), "plan", str(EXAMPLE), "--pricing",
                  str(tmp_path / "missing.yaml"))
    assert done.returncode == 1 and "missing.yaml" in done.stderr


def test_a_json_plan_with_its_estimate_still_reads_back() -> None:
    from ftspec.reconciler.saved import plan_document, plan_from_json

    plan = Plan(backend="local", changes=(
        Change(address="local.run.a", action=Action.CREATE, before=None,
               after={"spec_id": "a"}),))
    doc = plan_document(plan, estimate={"runs": [], "total": None, "line": None})
    assert doc["estimate"]["runs"] == []
    read = plan_from_json(json.loads(json.dumps(doc)))  # as a file holds it
    assert [c.address for c in read.changes] == ["local.run.a"]
