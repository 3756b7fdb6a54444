"""A local sweep's queue held by the points' real supervisors (``reconciler/local/slots.py``,
issue 38 item 2): with ``max_parallel: 1`` an apply returns at once with one point running
and the others queued (status says so), the points then run one after another in grid
order, and a queue that is stopped or killed leaves each point that never started with a
status that says so. The commands are ``sleep``s; every test runs in a private PID
namespace (it signals supervisors)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from ftspec.reconciler import engine
from ftspec.reconciler.local import runner
from ftspec.reconciler.local.backend import PREFIX, LocalBackend
from ftspec.reconciler.local.observe import observe
from ftspec.reconciler.model import Action, Change, Phase, Plan
from helpers.pidns import private_pid_namespace

from security.localstate import Events, project, sleep_after, wait_gone

IDS = ["sw-lr-1", "sw-lr-2", "sw-lr-3"]


def _points(seconds: float, max_parallel: int) -> list[dict[str, Any]]:
    out = []
    for i, spec_id in enumerate(IDS):
        after = sleep_after(spec_id, seconds)  # type: ignore[arg-type]
        after["queue"] = {"sweep": "sw", "max_parallel": max_parallel, "why": "test",
                          "position": i, "size": len(IDS)}
        out.append(after)
    return out


def _apply(backend: LocalBackend, afters: list[dict[str, Any]], events: Events) -> None:
    changes = tuple(Change(PREFIX + a["spec_id"], Action.CREATE, None, a, reason="test")
                    for a in afters)
    digests = {c.address: backend.store.digest(c.address[len(PREFIX):]) for c in changes}
    result = engine.apply(backend, Plan(backend="local", changes=changes,
                                        read_digests=digests, specs={}), events)
    assert result.ok, result.failed


def _view(backend: LocalBackend, spec_id: str) -> Any:
    record = backend.store.read(spec_id)
    assert record is not None
    return observe(record, backend.root)


def _interval(root: Path, spec_id: str) -> tuple[float, float]:
    run = root / ".ftspec/runs" / spec_id
    child = json.loads((run / "child.json").read_text())
    ended = json.loads((run / "exit.json").read_text())
    return float(child["started_at"]), float(ended["ended_at"])


def _wait_all(backend: LocalBackend, timeout: float = 60.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        views = [_view(backend, i) for i in IDS]
        if all(not v.active for v in views):
            return views
        time.sleep(0.2)
    raise AssertionError("the queued points did not end")


@private_pid_namespace
def test_one_at_a_time_apply_returns_at_once_and_the_points_run_in_grid_order(
        tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    backend = LocalBackend(root, stop_grace_s=2)
    events = Events()
    began = time.monotonic()
    _apply(backend, _points(4, max_parallel=1), events)
    assert time.monotonic() - began < 15  # apply does not wait for the queue
    text = str(events)
    assert f"{PREFIX}sw-lr-1: created, running" in text, text
    assert f"{PREFIX}sw-lr-2: created, queued" in text, text
    assert "queued sleep: point 3 of 3 waits for a slot" in text, text
    views = [_view(backend, i) for i in IDS]
    assert [v.phase for v in views[1:]] == [Phase.PENDING, Phase.PENDING]
    assert views[2].message.endswith("point 3 of 3 waits for a slot (at most 1 point at "
                                     "once: sweep.max_parallel)"), views[2].message
    assert views[2].platform()["queued"]["position"] == 2

    done = _wait_all(backend)
    assert [v.phase for v in done] == [Phase.SUCCEEDED] * 3, [v.message for v in done]
    spans = [_interval(root, i) for i in IDS]
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, spans  # the next point started after the previous one ended
    # the queued time is not the run's: elapsed counts from the command's start
    for view, (start, end) in zip(done, spans):
        assert view.run_started_at == start
        assert abs(view.metrics()["elapsed_s"] - (end - start)) < 0.5, view.metrics()
    assert spans[2][1] - done[2].record.started_at > 8  # point 3 waited for two points


@private_pid_namespace
def test_two_slots_run_two_points_at_once(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    backend = LocalBackend(root, stop_grace_s=2)
    _apply(backend, _points(2, max_parallel=2), Events())
    views = [_view(backend, i) for i in IDS]
    assert [v.phase for v in views] == [Phase.RUNNING, Phase.RUNNING, Phase.PENDING]
    _wait_all(backend)
    (_, e1), (s2, e2), (s3, _) = (_interval(root, i) for i in IDS)
    assert s2 < e1 and s3 >= min(e1, e2)


@private_pid_namespace
def test_a_stopped_or_killed_queue_says_which_points_never_started(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    backend = LocalBackend(root, stop_grace_s=2)
    _apply(backend, _points(300, max_parallel=1), Events())
    second, third = (_view(backend, i) for i in IDS[1:])
    assert second.phase is Phase.PENDING and third.phase is Phase.PENDING

    # a queued point stopped (what destroy does first): its supervisor records why (the
    # grace is long: on a loaded machine a supervisor may take seconds to answer SIGTERM,
    # and one still running after the grace is killed, which is the case below)
    record = backend.store.read(IDS[1])
    assert record is not None and runner.stop(root, record, Events(), grace_s=30)
    view = _view(backend, IDS[1])
    assert view.phase is Phase.FAILED
    assert view.message == ("failed: never started: stopped by SIGTERM while queued for a "
                            "slot (stopped by ftspec)"), view.message
    assert not (root / ".ftspec/runs" / IDS[1] / "child.json").exists()

    # a queued supervisor killed outright (SIGKILL: nothing written)
    assert third.pid is not None
    os.kill(third.pid, signal.SIGKILL)
    assert wait_gone(third.pid)
    view = _view(backend, IDS[2])
    assert view.phase is Phase.FAILED
    assert view.message == (f"failed: never started: its supervisor (pid {third.pid}) was "
                            "killed while point 3 of 3 waits for a slot (at most 1 point at "
                            "once: sweep.max_parallel)"), view.message
    assert _view(backend, IDS[0]).phase is Phase.RUNNING  # the running point goes on
