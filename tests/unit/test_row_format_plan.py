"""The row format is part of the IR (``Job.row_format``): the summary names it, so a format
change on Ray plans a replace whose ML changes say so in words.

The Ray backend's planner, through the engine's plan, runs against an in-memory Jobs API
holding the job the first spec submitted (a pure unit test of the planning logic; tests/e2e/test_ray_backend.py runs the
same planner against a real Ray head)."""

from __future__ import annotations

from typing import Any

from ftspec.compiler.dispatch import compile_job
from ftspec.reconciler import engine
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.model import Action
from ftspec.reconciler.ray.backend import RayBackend, submission
from ftspec.spec.ir import Job, RowFormat
from helpers.jobs import make_job

RAY = {"target": "ray", "ray": {"address": "http://127.0.0.1:8265"}}
TOKEN = {"hf_token": {"secretRef": None, "env": "HF_TOKEN"}}


class _Jobs:
    """The Jobs API's list, holding the submitted payloads."""

    address = RAY["ray"]["address"]

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs = jobs

    def list_jobs(self) -> list[dict[str, Any]]:
        return self.jobs


def _job(fmt: str, **data: Any) -> Job:
    train = {"uri": "hf://org/rows", "format": fmt, **data}
    return make_job(launcher="accelerate", deploy=RAY, secrets=TOKEN,
                    data={"train": train, "max_seq_len": 512},
                    resources={"nodes": 1, "gpus_per_node": 1,
                               "accelerator": "nvidia-a100-80gb"})


def _desired(job: Job) -> Desired:
    return Desired(job, tuple(compile_job(job, "ray")), "spec.yaml")


def test_the_ir_and_summary_carry_the_row_format() -> None:
    job = _job("alpaca")
    assert job.row_format == RowFormat(("alpaca",))
    assert job.summary["row format"] == "alpaca"
    mixed = make_job(data={"train": None, "mixture": {"datasets": [
        {"uri": "hf://org/a", "proportion": 0.5, "format": "chat"},
        {"uri": "hf://org/b", "proportion": 0.5, "format": "text"}]}})
    assert mixed.row_format.formats == ("chat", "text")
    assert mixed.row_format.name == "chat+text" and mixed.row_format.only is None


def test_a_format_change_on_ray_plans_a_replace_that_names_it() -> None:
    before, after = _desired(_job("alpaca")), _desired(_job("chat"))
    live = {**submission(before), "status": "RUNNING", "start_time": 1}
    backend = RayBackend()
    backend._apis[RAY["ray"]["address"]] = _Jobs([live])  # type: ignore[assignment]

    same = backend._change(before, backend._mine(before))
    assert same.action is Action.NOOP
    (change,) = engine.plan(backend, [after]).changes  # the engine writes the ML lines
    assert change.action is Action.REPLACE
    assert change.ml_changes == ("row format alpaca -> chat",), change.ml_changes
    assert "Ray jobs are immutable" in change.reason
