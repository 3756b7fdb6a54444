"""The human plan view, exact: every action (create, update, replace with the forcing field,
delete, drift, no-op) and the ``# ML:`` lines, for each backend's addresses and objects; a
created object short (generated files folded) and, in ``plan-verbose.txt``, whole (``-v``); a
sweep's runs as one block naming what differs.

Each case is a ``Plan`` as the backend returns it (pure data); the view is drawn from
``Plan.to_json()``, as `ftspec plan` does, and compared byte for byte with
``tests/golden/plan-view/<case>.txt`` (``--update-golden`` rewrites them for review).
"""

from __future__ import annotations

import pytest
from ftspec.cli.output import plain_markup
from ftspec.cli.render_plan import render_plan
from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler.model import Action, Change, FieldChange, Plan
from helpers.golden import GOLDEN_ROOT, check_golden

LABELS = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "job"}


def _trainjob(lr: str, runtime: str = "torchtune-llama3.2-1b") -> dict[str, object]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llama-lora", "namespace": "ml", "labels": dict(LABELS),
                         "annotations": {SUMMARY_ANNOTATION: f'{{"learning rate": "{lr}"}}'}},
            "spec": {"runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime"},
                     "trainer": {"numNodes": 1, "args": ["batch_size=4", f"optimizer.lr={lr}"]}}}


def _ray_job(sid: str) -> dict[str, object]:
    return {"address": "http://127.0.0.1:8265", "submission_id": sid,
            "entrypoint": "tune run lora_finetune_single_device --config config.yaml",
            "metadata": {"ftspec.dev/spec-id": "tiny-local"}}


def _local_run(lr: str, name: str = "tiny-local") -> dict[str, object]:
    return {"spec_id": name, "launcher": "torchtune", "files": {
                "config.yaml": f"lr: {lr}\nepochs: 1\noutput_dir: .ftspec/runs/{name}\n"},
            "argv": ["tune", "run", "lora_finetune_single_device", "--config", "config.yaml"],
            "run_dir": f".ftspec/runs/{name}"}


def _sweep_point(lr: str, name: str, dropout: str = "0.0") -> Change:
    """A created run of a sweep's point, as the local backend plans it (its ML summary
    beside the generated files; the LoRA dropout is in the config only)."""
    run = {**_local_run(lr, name), "spec_file": "sweep.yaml", "notes": [],
           "summary": {"model": "llama2", "learning rate": lr, "LoRA rank": "8"}}
    run["files"] = {"config.yaml": run["files"]["config.yaml"]  # type: ignore[index]
                    + f"model:\n  lora_dropout: {dropout}\n"}
    return Change(f"local.run.{name}", Action.CREATE, None, run, reason="no local run recorded",
                  spec_file="sweep.yaml")


TJ = "kubeflow.TrainJob.ml/llama-lora"
CASES: dict[str, Plan] = {
    "kubernetes-create": Plan("kubernetes", (
        Change(TJ, Action.CREATE, None, _trainjob("0.0002"), reason="not found"),)),
    "kubernetes-update-ml": Plan("kubernetes", (
        Change(TJ, Action.UPDATE, _trainjob("0.0002"), _trainjob("0.0001"), fields=(
            FieldChange("spec.trainer.args", ["batch_size=4", "optimizer.lr=0.0002"],
                        ["batch_size=4", "optimizer.lr=0.0001"]),
            FieldChange(f"metadata.annotations.{SUMMARY_ANNOTATION}",
                        '{"learning rate": "0.0002"}', '{"learning rate": "0.0001"}')),
            ml_changes=("learning rate 0.0002 -> 0.0001",)),)),
    "kubernetes-replace": Plan("kubernetes", (
        Change(TJ, Action.REPLACE, _trainjob("0.0002"),
               _trainjob("0.0002", "torchtune-llama3.2-3b"),
               reason="spec.runtimeRef.name forces replacement", fields=(
                   FieldChange("spec.runtimeRef.name", "torchtune-llama3.2-1b",
                               "torchtune-llama3.2-3b", forces_replace=True),),
               ml_changes=("model llama3_2-1b -> llama3_2-3b",)),)),
    "kubernetes-delete": Plan("kubernetes", (
        Change("kubeflow.TrainJob.ml/old-name", Action.DELETE, _trainjob("0.0002"), None,
               reason="no longer produced by job.yaml (spec renamed)"),)),
    "kubernetes-drift": Plan("kubernetes", (
        Change(TJ, Action.UPDATE, _trainjob("0.0003"), _trainjob("0.0002"), drift=True,
               reason="changed by field manager kubectl-edit", fields=(
                   FieldChange("spec.trainer.args", ["batch_size=4", "optimizer.lr=0.0003"],
                               ["batch_size=4", "optimizer.lr=0.0002"]),)),)),
    "kubernetes-noop": Plan("kubernetes", (
        Change(TJ, Action.NOOP, _trainjob("0.0002"), _trainjob("0.0002")),)),
    "ray-create": Plan("ray", (
        Change("ray.job.tiny-local", Action.CREATE, None, _ray_job("tiny-local-aaa"),
               reason="no job of this spec"),)),
    "ray-replace": Plan("ray", (
        Change("ray.job.tiny-local", Action.REPLACE,
               {"jobs": [{"submission_id": "tiny-local-aaa", "status": "RUNNING"}]},
               _ray_job("tiny-local-bbb"),
               reason="spec changed: Ray jobs are immutable; tiny-local-aaa is stopped first",
               fields=(FieldChange("submission_id", "tiny-local-aaa", "tiny-local-bbb", True),),
               ml_changes=("learning rate 0.001 -> 0.002",)),)),
    "ray-delete": Plan("ray", (
        Change("ray.job.tiny-local", Action.DELETE,
               {"address": "http://127.0.0.1:8265",
                "jobs": [{"submission_id": "tiny-local-aaa", "status": "SUCCEEDED"}]}, None,
               reason="stops the job if it runs and deletes it"),)),
    "ray-drift": Plan("ray", (
        Change("ray.job.tiny-local", Action.REPLACE,
               {"jobs": [{"submission_id": "tiny-local-aaa", "status": "STOPPED"}]},
               _ray_job("tiny-local-aaa"), drift=True,
               reason="job tiny-local-aaa was stopped outside ftspec; it is resubmitted"),)),
    "ray-noop": Plan("ray", (
        Change("ray.job.tiny-local", Action.NOOP, {"jobs": []}, _ray_job("tiny-local-aaa"),
               reason="job tiny-local-aaa is RUNNING"),)),
    "local-create": Plan("local", (
        Change("local.run.tiny-local", Action.CREATE, None, _local_run("0.001"),
               reason="no local run recorded"),)),
    "local-replace": Plan("local", (
        Change("local.run.tiny-local", Action.REPLACE, _local_run("0.001"),
               _local_run("0.002"), reason='what would run changed (files["config.yaml"])',
               fields=(FieldChange('files["config.yaml"]', "lr: 0.001\nepochs: 1\n",
                                   "lr: 0.002\nepochs: 1\n", True),),
               ml_changes=("learning rate 0.001 -> 0.002",)),)),
    "local-upgrade": Plan("local", (
        # the spec as written is the one applied; a new ftspec's default moved
        Change("local.run.tiny-local", Action.REPLACE, _local_run("0.001"),
               _local_run("0.001"), reason='what would run changed (files["config.yaml"])',
               fields=(FieldChange('files["config.yaml"]', "lr: 0.001\nweight_decay: 0.01\n",
                                   "lr: 0.001\nweight_decay: 0.0\n", True),),
               upgrade="the spec is unchanged since it was applied: the change comes from the "
               "ftspec upgrade (ftspec 0.1.0 -> 0.2.0), whose defaults changed: "
               "training.optimizer.weight_decay 0.01 -> 0.0; to keep the old run, pin it in "
               "the spec (training.optimizer.weight_decay: 0.01)"),)),
    "local-delete": Plan("local", (
        Change("local.run.tiny-local", Action.DELETE, _local_run("0.001"), None,
               reason="stops the run if active and forgets it"),)),
    "local-drift": Plan("local", (
        # reconciler/local/backend.py: the same run, the last run failed and ftspec did
        # not stop it (the record has no stop request), so the REPLACE is drift.
        Change("local.run.tiny-local", Action.REPLACE,
               {"spec_id": "tiny-local", "spec_file": "tiny-local.yaml",
                "argv": ["tune", "run", "lora_finetune_single_device", "--config",
                         "config.yaml"], "phase": "Failed", "pid": 4242, "exit_code": 1},
               _local_run("0.001"), drift=True,
               reason="the last run failed: exit code 1; apply runs it again"),)),
    "local-noop": Plan("local", (
        Change("local.run.tiny-local", Action.NOOP, _local_run("0.001"),
               _local_run("0.001")),)),
    "local-sweep": Plan("local", tuple(
        _sweep_point(lr, f"sweep-lr-{lr}") for lr in ("0.01", "0.003", "0.001"))),
    "local-sweep-two-fields": Plan("local", tuple(
        _sweep_point(lr, f"sweep-lr-{lr}-dropout-{d}", d)
        for lr in ("0.01", "0.001") for d in ("0.0", "0.1"))),
    "local-moved": Plan("local", (
        Change("local.run.tiny-local", Action.NOOP, _local_run("0.001"), _local_run("0.001"),
               moved_from="local.run.tiny-local",
               moved="spec file renamed from examples/old.yaml"),
        Change("local.run.lora", Action.NOOP, _local_run("0.001"), _local_run("0.001"),
               moved_from="local.run.my-lora",
               moved="id changed from 'my-lora' to 'lora' by the ftspec upgrade"))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_view(case: str, update_golden: bool) -> None:
    data = CASES[case].to_json()
    text = plain_markup(render_plan(data))
    assert text is not None
    saved = plain_markup(render_plan(data, saved_to="plan.json"))
    assert saved is not None
    files = {"plan.txt": text + "\n", "plan-out.txt": saved + "\n"}
    if any(c.action is Action.CREATE for c in CASES[case].changes):  # the whole objects
        verbose = plain_markup(render_plan(data, verbose=True))
        assert verbose is not None
        files["plan-verbose.txt"] = verbose + "\n"
    check_golden(GOLDEN_ROOT / "plan-view" / case, files, update_golden)
