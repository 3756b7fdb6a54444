"""What `apply` says when it ends: what happened, in runs ("Apply complete: 1 run started"),
never "complete" as if the training were done; with --wait a verdict that follows the runs
("Run succeeded" / "Run failed"); and a run that an apply did not start is not replayed from
its first log line (its start-up lines and old steps are not reported again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.cli.apply_flow import _FromNow, outcome_text, run_verdict
from ftspec.cli.live import ConsoleReporter
from ftspec.cli.output import plain_markup
from ftspec.reconciler.model import Phase, Status


def _plain(text: str) -> str:
    out = plain_markup(text)
    assert out is not None
    return out


def test_outcome_counts_runs() -> None:
    assert outcome_text(1, 0, 0) == "1 run started"
    assert outcome_text(3, 0, 1) == "3 runs started, 1 destroyed"
    assert outcome_text(0, 2, 0) == "2 changed in place"
    assert outcome_text(0, 0, 0) == "nothing changed"


def test_verdict_follows_the_runs() -> None:
    ok = Status("local.run.a", Phase.SUCCEEDED)
    bad = Status("local.run.b", Phase.FAILED, "exit code 1: out of memory")
    assert _plain(run_verdict([ok], set())) == "Run succeeded."
    assert _plain(run_verdict([bad], set())) == "Run failed: exit code 1: out of memory"
    assert _plain(run_verdict([ok, bad], set())) == "1 of 2 runs did not succeed: local.run.b"
    assert _plain(run_verdict([ok, ok], {"local.run.a"})) == \
        "2 runs succeeded. (already finished: this apply started nothing)"
    running = Status("local.run.a", Phase.RUNNING, "step 3")
    assert _plain(run_verdict([running], set())) == \
        "Run not finished (Running at the timeout): step 3"


class _Seen(ConsoleReporter):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def event(self, message: str, **data: Any) -> None:
        self.messages.append(message)


def test_a_run_followed_from_where_it_is() -> None:
    seen = _Seen()
    reporter = _FromNow(seen, step=3)
    reporter.event("a: loading the model", run_phase="loading the model")
    for step in (1, 2, 3, 4):
        reporter.event(f"step {step}", progress=True, step=step)
    reporter.event("a: saving a checkpoint", run_phase="saving a checkpoint")
    assert seen.messages == ["step 3", "step 4", "a: saving a checkpoint"]


def test_a_run_not_started_yet_is_followed_whole() -> None:
    seen = _Seen()
    reporter = _FromNow(seen, step=0)
    reporter.event("a: loading the model", run_phase="loading the model")
    reporter.event("step 1", progress=True, step=1)
    assert seen.messages == ["a: loading the model", "step 1"]


def test_show_full_prints_the_whole_generated_files(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from ftspec.reconciler.model import Action, Change, Plan
    from ftspec.reconciler.saved import save_plan
    from helpers.cli_run import run

    config = "".join(f"key_{i}: {i}\n" for i in range(40))
    after = {"spec_id": "tiny", "files": {"config.yaml": config}, "run_dir": ".ftspec/runs/tiny"}
    save_plan(Plan("local", (Change("local.run.tiny", Action.CREATE, None, after),)),
              tmp_path / "p.plan")
    code, short, _ = run(capsys, "show", str(tmp_path / "p.plan"))
    assert code == 0
    assert 'files["config.yaml"] = (generated, 40 lines; -v shows them)' in short, short
    assert "key_39: 39" not in short
    code, full, _ = run(capsys, "show", str(tmp_path / "p.plan"), "--full")
    assert code == 0
    assert "key_0: 0" in full and "key_39: 39" in full, full
