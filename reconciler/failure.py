"""Why a run failed, at a glance, on every backend: one ``reason`` dict for ``status``.

Read from what each backend knows (the exit code or signal, a pod's termination reason,
Ray's job error) and from the log: the trainer's last exception (type, message and the
file:line that raised it) out of the last Python traceback. A torchrun / accelerate launch
repeats a worker's failure as ``ChildFailedError`` / ``CalledProcessError``; those wrappers
are skipped for the worker's own exception when the log holds it.

The validity class follows the SFTTrainer seed: ``invalid`` when the run ran out of memory
(``torch.OutOfMemoryError``, CUDA's illegal memory access, Python's ``MemoryError``, a pod
``OOMKilled``, a SIGKILL ftspec did not send: the kernel's out-of-memory killer), ``failed``
on any other error, ``ok`` once it succeeded — unless it trained fewer optimizer steps than
planned with no stop rule to end it early (``short_run``): a launcher that exits 0 after no
step (torchtune on a dataset that fills no global batch) leaves the adapter as it started,
so that run is ``invalid`` too, with ``trained`` saying "trained 0 of 16 planned steps".
A known data error (``reconciler.data_errors``) located in the dataset by the backend adds
``data``: the file, row, column and spec field (``data_text``), said before the exception.

Hand-written: a traceback's shape is fixed by CPython and no library parses it from text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Fault))"
                        r"(?::\s?(.*))?$")
_RANK_PREFIX = re.compile(r"^\[[\w.-]+\]:? ")
"""torchrun's ``[rank1]: `` before each line of a worker's output."""
_WRAPPERS = ("ChildFailedError", "CalledProcessError")
_CUDA_OOM = ("CUDA out of memory", "illegal memory access", "CUBLAS_STATUS_ALLOC_FAILED")
_MAX_MESSAGE = 400

OK, INVALID, FAILED = "ok", "invalid", "failed"


def last_exception(lines: Sequence[str]) -> dict[str, Any] | None:
    """The last exception a traceback in ``lines`` ends with: ``type``, ``message``, and
    ``file``/``line`` of the frame that raised it; a wrapper only when nothing else is."""
    found: list[dict[str, Any]] = []
    frame: tuple[str, int] | None = None
    inside = False
    for raw in lines:
        line = _RANK_PREFIX.sub("", raw.rstrip(), count=1)
        if _TRACEBACK in line:
            inside, frame = True, None
            continue
        if not inside:
            continue
        hit = _FRAME.match(line)
        if hit:
            frame = (hit.group(1), int(hit.group(2)))
            continue
        if line.startswith((" ", "\t")) or not line:
            continue
        exc = _EXCEPTION.match(line)
        if exc is not None:
            found.append({"type": exc.group(1), "message": (exc.group(2) or "")[:_MAX_MESSAGE],
                          "file": frame[0] if frame else None,
                          "line": frame[1] if frame else None})
        inside = False
    own = [e for e in found if not e["type"].endswith(_WRAPPERS)]
    chosen = own or found
    return chosen[-1] if chosen else None


def out_of_memory(exception: dict[str, Any] | None) -> str | None:
    """``cuda`` / ``cpu`` when the exception is running out of memory, else None."""
    if exception is None:
        return None
    text = f"{exception['type']}: {exception['message']}"
    if "OutOfMemoryError" in exception["type"] or any(s in text for s in _CUDA_OOM):
        return "cuda"
    if exception["type"].rsplit(".", 1)[-1] == "MemoryError":
        return "cpu"
    return None


def reason(*, exit_code: int | None = None, signal: str | None = None,
           stopped_by_ftspec: bool = False, log: Sequence[str] = (),
           platform_reason: str | None = None, oom: str | None = None) -> dict[str, Any]:
    """The reason of a failed run; ``platform_reason``: the platform's own words (a pod's
    termination reason, Ray's job error), ``oom``: what the platform knows of memory."""
    exception = last_exception(log)
    memory = oom or out_of_memory(exception)
    if memory is None and signal == "SIGKILL" and not stopped_by_ftspec:
        memory = "cpu (likely: killed by SIGKILL, which ftspec did not send; the kernel's "\
                 "out-of-memory killer does this)"
    out: dict[str, Any] = {"validity": INVALID if memory else FAILED}
    if exit_code is not None:
        out["exit_code"] = exit_code
    if signal:
        out["signal"] = signal
    if stopped_by_ftspec:
        out["stopped_by_ftspec"] = True
    if memory:
        out["out_of_memory"] = memory
    if platform_reason:
        out["platform"] = platform_reason
    if exception is not None:
        out["exception"] = exception
    return out


def short_run(trained: int, planned: int | None, *, stop_rule: bool,
              slack: int = 0) -> dict[str, Any]:
    """The reason a run that exited cleanly is ``invalid``: it trained fewer optimizer steps
    than its plan (``planned``, the Job's total steps when it was applied) and no stop rule
    (``training.stop``, early stopping) may end it sooner. ``slack``: steps the log may not
    show (a trainer that logs every N steps). Empty when it trained what was planned."""
    if stop_rule or not planned or trained + slack >= planned:
        return {}
    return {"validity": INVALID, "trained": f"trained {trained} of {planned} planned steps"}


def data_text(d: dict[str, Any], *, field: bool = True) -> str:
    """``data.train.format: row 51 of data.jsonl (line 52): column 'output' is null`` (a
    dataset row's problem: ``reconciler.local.datascan.RowProblem.to_json``)."""
    at = f"row {d['row']} of {d['file']}"
    if d.get("line") is not None and d["line"] != d["row"]:
        at += f" (line {d['line']})"
    what = f"column {d['column']!r} {d['problem']}" if d.get("column") else d["problem"]
    more = f" ({d['more_rows']} more like it)" if d.get("more_rows") else ""
    return (f"{d['field']}: " if field else "") + f"{at}: {what}{more}"


def describe(r: dict[str, Any]) -> str:
    """One line: ``out of memory: cuda; torch.OutOfMemoryError: … (at train.py:42)``."""
    parts: list[str] = []
    if r.get("trained"):
        parts.append(str(r["trained"]))
    if r.get("out_of_memory"):
        parts.append(f"out of memory: {r['out_of_memory']}")
    if r.get("data"):
        parts.append(data_text(r["data"]))
    exc = r.get("exception")
    if exc:
        text = exc["type"] + (f": {exc['message']}" if exc.get("message") else "")
        if exc.get("file"):
            text += f" (at {exc['file']}:{exc['line']})"
        parts.append(text)
    if r.get("platform") and not exc:
        parts.append(str(r["platform"]))
    if not parts:
        if r.get("signal"):
            parts.append(f"killed by {r['signal']}")
        elif r.get("exit_code") is not None:
            parts.append(f"exit code {r['exit_code']}")
    return "; ".join(parts)
