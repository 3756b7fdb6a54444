"""``RunRecord``: what ftspec started for one spec, and the one strict parser of its file.

A record is read back from ``.ftspec/local/<spec-id>.json``, which anyone who can write the
project can edit: every field is checked here (type, finite number, pid range, a run folder
inside the project) before anything uses it, and even a valid record never decides alone
which processes are signalled (``procs.identify`` proves that from the OS).

A record is written twice per run: ``state: starting`` (the intent, before the supervisor
can start: no pid yet) and ``state: started`` (with the supervisor's pid and create time).
A record left at ``starting`` by a killed ``apply`` is finished by the next one.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ftspec.spec.patterns import SPEC_ID

RECORD_VERSION = 1
STARTING = "starting"
STARTED = "started"
STATES = (STARTING, STARTED)
PID_MAX = 1 << 22
"""Linux's PID_MAX_LIMIT: no pid is larger."""
LOG_NAME = "train.log"


class RecordError(ValueError):
    """One field of a run record is wrong (``key``: ``problem``)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class RunRecord:
    """What ftspec started for one spec. Live facts (alive? exit code?) are read separately."""

    spec_id: str
    spec_hash: str
    spec_file: str
    launcher: str
    argv: list[str]
    env: dict[str, str]
    """Only what ftspec added to the inherited environment (never the whole environment)."""
    cwd: str
    run_dir: str
    """Relative to the project root (the state root), inside it."""
    log: str
    started_at: float
    supervisor_pid: int | None
    """None while ``state`` is ``starting``."""
    supervisor_create_time: float | None
    pgid: int | None
    summary: dict[str, str] = field(default_factory=dict)
    version: int = RECORD_VERSION
    state: str = STARTED
    applied: str = ""
    """``ftspec.reconciler.applied``'s record of what was applied (ftspec version, spec as
    written, defaults, ML summary), decoded and checked there; empty in records of an
    older ftspec."""
    run_id: str = ""
    name: str = ""
    """The job's metadata.name when it was applied; empty in records of an earlier ftspec,
    whose spec id was the file's name (only those can move to a name: ``identity``)."""
    """The id the run folder is named after when it is not ``spec_id``: the run was
    started under another identity and moved (``reconciler.identity``) without restarting."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_record(raw: bytes, spec_id: str) -> RunRecord:
    """The record of ``spec_id`` from its file's bytes; raises ``RecordError``."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise RecordError("", "nested too deeply to be a run record") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError("", f"not valid JSON ({exc})") from None
    return parse_record(data, spec_id)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_record(data: object, spec_id: str) -> RunRecord:
    """Check every field; unknown fields (written by a newer ftspec) are ignored."""
    if not isinstance(data, dict):
        raise RecordError("", f"a JSON object expected, not {_kind(data)}")
    f = _Fields(data)
    version = f.integer("version", 1, RECORD_VERSION)
    state = f.text("state", default=STARTED)
    if state not in STATES:
        raise RecordError("state", f"{state!r} is not one of {', '.join(STATES)}")
    got_id = f.text("spec_id")
    if got_id != spec_id:
        raise RecordError("spec_id", f"{got_id!r} does not match the file name ({spec_id!r})")
    run_dir = f.text("run_dir")
    run_id = f.text("run_id", default="")
    if run_id and not re.fullmatch(SPEC_ID, run_id):
        raise RecordError("run_id", f"{run_id!r} is not a spec id")
    _inside_project(run_dir, run_id or spec_id)
    log = f.text("log")
    if log != f"{run_dir}/{LOG_NAME}":
        raise RecordError("log", f"{log!r} is not the run's log ({run_dir}/{LOG_NAME})")
    started = state == STARTED
    pid = f.pid("supervisor_pid", required=started)
    create_time = f.time("supervisor_create_time", required=started)
    pgid = f.pid("pgid", required=started)
    if pgid != pid:
        raise RecordError("pgid", f"{pgid} is not the supervisor's pid ({pid}): a run's "
                                  "supervisor leads its own process group")
    if (create_time is None) != (pid is None):
        raise RecordError("supervisor_create_time", "set without a pid, or missing with one")
    started_at = f.time("started_at", required=True)
    assert started_at is not None
    return RunRecord(
        spec_id=got_id, spec_hash=f.text("spec_hash"), spec_file=f.text("spec_file"),
        launcher=f.text("launcher"), argv=f.texts("argv"), env=f.mapping("env"),
        cwd=f.text("cwd"), run_dir=run_dir, log=log, started_at=started_at,
        supervisor_pid=pid, supervisor_create_time=create_time, pgid=pgid,
        summary=f.mapping("summary", required=False), version=version, state=state,
        applied=f.text("applied", default=""), run_id=run_id,
        name=f.text("name", default=""))


def _inside_project(run_dir: str, spec_id: str) -> None:
    path = PurePosixPath(run_dir)
    if (path.is_absolute() or run_dir != str(path) or ".." in path.parts
            or "\\" in run_dir or "\0" in run_dir):
        raise RecordError("run_dir", f"{run_dir!r} is not a plain relative path inside the "
                                     "project")
    if path.name != spec_id or len(path.parts) < 2:
        raise RecordError("run_dir", f"{run_dir!r} is not a run folder of {spec_id!r} "
                                     f"(WORKDIR/{spec_id})")


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _Fields:
    def __init__(self, data: dict[Any, Any]) -> None:
        self.data = data

    def _get(self, key: str, required: bool) -> object:
        if key not in self.data:
            if required:
                raise RecordError(key, "missing")
            return None
        return self.data[key]

    def text(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default is None)
        if value is None and default is not None and key not in self.data:
            return default
        if not isinstance(value, str):
            raise RecordError(key, f"a string expected, not {_kind(value)}")
        return value

    def texts(self, key: str) -> list[str]:
        value = self._get(key, True)
        if not isinstance(value, list) or not value or not all(isinstance(v, str)
                                                                 for v in value):
            raise RecordError(key, "a non-empty list of strings expected")
        return list(value)

    def mapping(self, key: str, required: bool = True) -> dict[str, str]:
        value = self._get(key, required)
        if value is None and not required:
            return {}
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise RecordError(key, "an object of strings expected")
        return dict(value)

    def integer(self, key: str, low: int, high: int) -> int:
        value = self._get(key, False)
        if value is None and key not in self.data:
            return RECORD_VERSION
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise RecordError(key, f"an integer from {low} to {high} expected, not {value!r}")
        return value

    def pid(self, key: str, required: bool) -> int | None:
        value = self._get(key, required)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(key, f"a process id (integer) expected, not {_kind(value)}")
        if not 1 < value < PID_MAX:
            raise RecordError(key, f"{value} is not a process id a run can have "
                                   f"(2 to {PID_MAX - 1})")
        return value

    def time(self, key: str, required: bool) -> float | None:
        value = self._get(key, required)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RecordError(key, f"a time in seconds expected, not {_kind(value)}")
        if not math.isfinite(value) or value <= 0:
            raise RecordError(key, f"{value!r} is not a time (a positive, finite number)")
        return float(value)
