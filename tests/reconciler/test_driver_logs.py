"""The one `logs` policy of a job with one log (``reconciler.driver_logs``) over the two ways
a backend reads its log (``logread.LogFollower``: a file; ``logread.TextLog``: an API that
returns the whole log), and the local and Ray backends through it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.driver_logs import one_log, refuse_selector
from ftspec.reconciler.logread import LogFollower, TextLog
from ftspec.reconciler.ray.backend import RayBackend
from security.localstate import SPEC, ended_run, run_cli


class Script:
    """A log that grows by one step at each read, and a job that ends after ``ends_after``
    reads of whether it ended."""

    def __init__(self, texts: list[str], ends_after: int) -> None:
        self.texts, self.reads, self.asked, self.ends_after = texts, 0, 0, ends_after
        self.pauses: list[float] = []

    def fetch(self) -> str:
        text = self.texts[min(self.reads, len(self.texts) - 1)]
        self.reads += 1
        return text

    def ended(self) -> bool:
        self.asked += 1
        return self.asked > self.ends_after


def _follow(script: Script, tail: int | None = None) -> list[str]:
    return list(one_log(TextLog(script.fetch), script.ended, follow=True, tail=tail,
                        pause_s=0.5, sleep=script.pauses.append))


def test_follow_prints_each_line_once_and_the_unterminated_last_one_when_the_job_ends(
) -> None:
    script = Script(["a\nb", "a\nb\nc\n", "a\nb\nc\n", "a\nb\nc\nlast words"], ends_after=1)
    assert _follow(script) == ["a", "b", "c", "last words"]
    # read 1: a; read 2: b, c; read 3: nothing, not ended; read 4: nothing new complete,
    # ended; the final read prints the line that never got its newline
    assert script.reads == 5 and script.asked == 2
    assert script.pauses == [0.5, 0.5]


def test_the_end_is_asked_only_after_a_read_that_brought_nothing() -> None:
    script = Script(["x\n", "x\nxx\nxx\n", "x\nxx\nxx\nxxx\n"], ends_after=0)
    assert _follow(script) == ["x", "xx", "xx", "xxx"]
    assert script.asked == 1 and script.reads == 5


def test_tail_prints_the_last_lines_as_a_terminal_shows_them_then_follows() -> None:
    bars = "head\n 1/4\r 2/4\r 4/4\ndone\npart"
    script = Script([bars, bars + "ial\nmore\n"], ends_after=0)
    # the tail folds the bar's redraws into its last state; the unterminated line waits
    assert _follow(script, tail=2) == [" 4/4", "done", "partial", "more"]
    assert list(one_log(TextLog(lambda: bars), lambda: True, follow=False, tail=0,
                        pause_s=1)) == []
    assert list(one_log(TextLog(lambda: bars), lambda: True, follow=False, tail=3,
                        pause_s=1)) == [" 4/4", "done", "part"]


def test_a_selector_is_refused_for_a_job_with_one_log() -> None:
    refuse_selector(None, "a Ray job")
    with pytest.raises(BackendError, match="--selector picks pods of a Kubernetes job; "
                                           "a Ray job has one log") as caught:
        refuse_selector("job-index=0", "a Ray job")
    assert caught.value.hint == "leave --selector out"


def test_a_file_tail_starts_at_a_line_and_the_next_read_after_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"first line is long\nsecond\nthird\npart")
    follower = LogFollower(log)
    assert follower.read_end(max_bytes=20) == "second\nthird\n"  # 20 bytes start mid-line
    with log.open("ab") as f:
        f.write(b"ial\n")
    assert follower.read_new() == ["partial"]
    assert LogFollower(log).read_end(final=True) == log.read_text()
    assert LogFollower(tmp_path / "absent.log").read_end() == ""


@pytest.fixture
def oom_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose spec's local run ended, its log's last line without a newline."""
    ended_run(tmp_path, "step 1\nstep 2\nTraceback: out of memory", returncode=1)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("flags", [[], ["--follow"], ["--tail", "1", "--follow"]])
def test_local_logs_of_an_ended_run_print_its_unterminated_last_line(
        oom_run: Path, flags: list[str]) -> None:
    code, out = run_cli(["logs", SPEC, *flags])
    assert code == 0, out
    # following, the tail is of the complete lines: the unterminated one comes at the end
    want = ["step 2"] if "--tail" in flags else ["step 1", "step 2"]
    assert out.splitlines() == [*want, "Traceback: out of memory"]


class _Api:
    address = "http://127.0.0.1:8265"

    def __init__(self, text: str) -> None:
        self.text = text

    def logs(self, sid: str) -> str:
        return self.text

    def get_job(self, sid: str) -> dict[str, Any]:
        return {"status": "SUCCEEDED"}


class _Ray(RayBackend):
    """The Ray backend over a Jobs API answering one ended job's log."""

    def __init__(self, text: str) -> None:
        super().__init__("http://127.0.0.1:8265")
        self.fake = _Api(text)

    def _current(self, d: Any) -> dict[str, Any] | None:
        return {"submission_id": "ftspec-tiny-1", "status": "SUCCEEDED"}

    def api(self, d: Any) -> Any:
        return self.fake


def _ray_logs(text: str, **kw: Any) -> list[str]:
    desired: Any = SimpleNamespace(spec_file="s.yaml")
    return list(_Ray(text).logs(desired, **kw))


def test_ray_logs_tail_zero_prints_nothing_and_tail_folds_bar_redraws() -> None:
    text = "a\n 1/2\r 2/2\nb\n"
    assert _ray_logs(text, tail=0) == []
    assert _ray_logs(text, tail=2) == [" 2/2", "b"]
    assert _ray_logs(text) == ["a", " 1/2", " 2/2", "b"]
    assert _ray_logs(text, follow=True) == ["a", " 1/2", " 2/2", "b"]
    with pytest.raises(BackendError, match="a Ray job has one log"):
        _ray_logs(text, selector="x=y")
