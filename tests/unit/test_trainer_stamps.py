"""What the Trainer's webhook stamps on a TrainJob is not a change ftspec plans."""

from __future__ import annotations

from ftspec.reconciler.kubernetes.comparable import comparable


def _trainjob(time: str | None, team: str = "nlp") -> dict:
    patch = {"manager": "ftspec.dev/ftspec", "trainingRuntimeSpec": {
        "template": {"metadata": {"labels": {"team": team}}}}}
    if time is not None:
        patch["time"] = time
    return {"kind": "TrainJob", "metadata": {"name": "x"}, "spec": {"runtimePatches": [patch]}}


def test_runtime_patch_time_set_at_each_admission_is_not_compared() -> None:
    live = _trainjob("2026-11-28T09:46:57Z")
    dry_run = _trainjob("2026-11-28T09:46:58Z")
    assert comparable(live) == comparable(dry_run) == comparable(_trainjob(None))


def test_the_rest_of_the_patch_is_still_compared() -> None:
    assert comparable(_trainjob("t")) != comparable(_trainjob("t", team="vision"))
