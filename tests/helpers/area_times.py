"""pytest plugin: the session's test time per area (``tests/<area>/``), printed at its end.

The time of a test is its setup, call and teardown as pytest reports them, so an area whose
fixtures start a component (the API server, a Ray head) carries that start. Printed on every
run, so the full suite's log (``tests/run.sh``, CI) says where its time goes; a timing here is
information only, never a pass or a failure.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

import pytest

_SECONDS: dict[str, float] = defaultdict(float)
_TESTS: dict[str, set[str]] = defaultdict(set)


def area_of(nodeid: str) -> str:
    """``tests/unit/test_x.py::t`` -> ``unit``; a module at the top of tests/ is its own file."""
    parts = PurePosixPath(nodeid.split("::", 1)[0]).parts
    if parts and parts[0] == "tests":
        parts = parts[1:]
    return parts[0] if len(parts) > 1 else (parts[0] if parts else "?")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    area = area_of(report.nodeid)
    _SECONDS[area] += report.duration
    _TESTS[area].add(report.nodeid)


def table(seconds: dict[str, float], tests: dict[str, set[str]]) -> list[str]:
    """One line per area, the longest first, and the total."""
    total = sum(seconds.values())
    lines = [f"{'area':28s} {'tests':>6s} {'seconds':>9s} {'share':>6s}"]
    for area, took in sorted(seconds.items(), key=lambda kv: -kv[1]):
        share = 100 * took / total if total else 0.0
        lines.append(f"{area:28s} {len(tests[area]):6d} {took:9.1f} {share:5.1f}%")
    lines.append(f"{'total':28s} {sum(len(t) for t in tests.values()):6d} {total:9.1f}")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _SECONDS:
        return
    terminalreporter.section("time per area (setup + call + teardown)")
    for line in table(_SECONDS, _TESTS):
        terminalreporter.write_line(line)
