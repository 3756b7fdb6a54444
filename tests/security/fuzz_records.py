"""Mutation fuzzing of local run records (``.ftspec/local/<id>.json``), shared by
``test_fuzz.py`` and ``bench/fuzz.py --records``.

A mutant is a record ftspec would write for the quickstart spec, naming a bystander process
(a ``sleep`` leading its own session, like a supervisor), changed by a few mutators: hostile
values in any field (wrong types, NaN, pids 0/1/-1/huge, paths outside the project), fields
removed or added, the text cut or a byte changed. Each mutant goes through ``status``,
``status --json``, ``plan``, ``destroy --auto-approve``, ``logs`` and ``output`` in
process. Outcome classes (``fuzzing.Outcome``):

- ``ok``        every command answered (a record that still parses and proves nothing)
- ``refused``   a command exited 1 with an error naming the record
- ``crash``     an "internal error" or a traceback reached the user
- ``signalled`` the bystander process (or this one) was killed: a record decided a signal

Run it only in a private PID namespace (``helpers.pidns``): a regression may signal anything.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from security.fuzzing import Outcome
from security.localstate import RECORD, SPEC, alive, project, record_for, run_cli

RECORD_BAD_CLASSES = ("crash", "signalled")
COMMANDS = [["status", SPEC], ["status", SPEC, "--json"], ["plan", SPEC],
            ["destroy", SPEC, "--auto-approve"], ["logs", SPEC], ["output", SPEC]]
_NAN = "__NaN__"


def hostile_values(pid: int) -> list[Any]:
    return [None, "", "1", str(pid), -1, 0, 1, 2, pid, -pid, 2**31, 2**64, 10**400 // 10**300,
            1.5, 1e308, -1e308, _NAN, True, False, [], {}, [pid], {"pid": pid}, "/etc",
            "/tmp/x/tiny-local", "../../tiny-local", ".ftspec/runs/../tiny-local",
            ".ftspec/runs/tiny-local", "\x00", "\x1b[2J", "x" * 5000, "starting",
            "started", "tiny-local"]


def _set_field(data: dict[str, Any], rng: random.Random, pid: int) -> None:
    data[rng.choice(sorted(data))] = rng.choice(hostile_values(pid))


def _drop_field(data: dict[str, Any], rng: random.Random, pid: int) -> None:
    if data:
        del data[rng.choice(sorted(data))]


def _add_field(data: dict[str, Any], rng: random.Random, pid: int) -> None:
    data[rng.choice(["extra", "pid", "__proto__", "", "state"])] = rng.choice(
        hostile_values(pid))


def _intent(data: dict[str, Any], rng: random.Random, pid: int) -> None:
    data["state"] = "starting"
    for key in ("supervisor_pid", "supervisor_create_time", "pgid"):
        if rng.random() < 0.7:
            data[key] = None


_MUTATORS = (_set_field, _set_field, _set_field, _drop_field, _add_field, _intent)


def mutate_record(pid: int, create_time: float, seed: int, count: int) -> str:
    rng = random.Random(seed)
    data = record_for(pid, create_time)
    for _ in range(count):
        rng.choice(_MUTATORS)(data, rng, pid)
    text = json.dumps(data).replace(f'"{_NAN}"', rng.choice(["NaN", "Infinity", "-Infinity"]))
    roll = rng.random()
    if roll < 0.08:
        text = text[: rng.randrange(len(text) + 1)]
    elif roll < 0.16:
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice('{}[]",:0\\\x00') + text[at + 1:]
    elif roll < 0.2:
        text = rng.choice(["[]", "null", "1", '"x"', "[" * 10_000, "{" * 10_000])
    return text


def run_record_mutant(text: str, root: Path, bystander_pid: int) -> Outcome:
    """Plant the record in ``root`` (the working directory) and run every command."""
    path = root / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = 0
    refused = False
    for args in COMMANDS:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        code, output = run_cli(args)
        runs += 1
        if "internal error" in output or "Traceback (most recent call last)" in output:
            return Outcome("crash", f"{args[0]}: {output.strip()[-300:]}", runs)
        if not alive(bystander_pid):
            return Outcome("signalled", f"{args[0]} killed the bystander", runs)
        if code != 0:
            if str(path) not in output:
                return Outcome("crash", f"{args[0]}: an error not naming the record: "
                                        f"{output.strip()[-300:]}", runs)
            refused = True
    return Outcome("refused" if refused else "ok", "", runs)


def fresh_project(base: Path, n: int) -> Path:
    return project(base / f"p{n}")
