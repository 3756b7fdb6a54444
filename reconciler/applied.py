"""The record of what ftspec applied, kept with the run (Kubernetes annotation, Ray job
metadata, local run record): one compact JSON string, the same on every backend.

It is what a later ``plan`` needs beside the live run itself:

* ``ftspec``: the version that applied it;
* ``written``: the digest of the spec as the user wrote it (``Job.written``);
* ``defaults``: the values the spec took from ftspec's defaults (``Job.defaults``), as
  zlib-compressed JSON in base64 (a few hundred bytes);
* ``summary``: the job in ML terms (``ml_summary``): the one channel through which the
  plan words a change in ML quantities;
* ``inputs``: what the run read, by content (``reconciler.inputs``: the digest and rows of
  each ``file://`` input, an ``hf://`` model's revision), which ``plan`` compares with the
  inputs as they are now.

Whether a run changes is decided by comparing what would run, and the inputs recorded
here with the inputs now; the rest of the record explains a change: when the spec as written is the one applied, the
change comes from a new ftspec, and the defaults that moved are named so the user can pin
the old value. Records are read back from the cluster, so they are untrusted input: a
record that is too large, not JSON, or of the wrong shape reads as no record.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ftspec.reconciler.inputs import InputState, from_record
from ftspec.spec.ir import Job

RECORD_KEY = "ftspec.dev/applied"
"""The annotation (Kubernetes) and metadata key (Ray) holding the record."""
MAX_RECORD_CHARS = 64 * 1024
MAX_DEFAULTS_BYTES = 1 << 20


@lru_cache(maxsize=1)
def ftspec_version() -> str:
    """The installed ftspec's version (setuptools-scm's, from the git tag), the one
    ``--version`` prints and every record ftspec writes names; ``0+unknown`` (a valid
    version that sorts first) where ftspec runs without being installed.

    Read from the file the install wrote beside this module (``_version.py``,
    setuptools-scm's ``version_file``) where it is there, as every plan writes it into
    its records: asking ``importlib.metadata`` scans every installed distribution (about
    20 ms of a plan where torch and Ray are installed). A copy run without installing has
    no such file and asks the installed distribution, as before."""
    try:
        from ftspec.reconciler._version import version as written
    except ImportError:
        written = ""
    if written:
        return written
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ftspec")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class AppliedRecord:
    ftspec: str
    written: str
    defaults: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, InputState] = field(default_factory=dict)
    """Field (``data.train.uri``) -> what the run read there."""


def record_of(job: Job, inputs: tuple[InputState, ...] = ()) -> AppliedRecord:
    return AppliedRecord(ftspec_version(), job.written, dict(job.defaults), dict(job.summary),
                         {state.field: state for state in inputs})


def encode(record: AppliedRecord) -> str:
    packed = zlib.compress(json.dumps(record.defaults, sort_keys=True,
                                      separators=(",", ":")).encode(), 9)
    data: dict[str, Any] = {"ftspec": record.ftspec, "written": record.written,
                            "defaults": base64.b64encode(packed).decode(),
                            "summary": record.summary}
    if record.inputs:
        data["inputs"] = {key: state.to_record() for key, state in record.inputs.items()}
    return json.dumps(data, separators=(",", ":"), sort_keys=False)


def _defaults(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(text, validate=True), MAX_DEFAULTS_BYTES)
        if inflate.unconsumed_tail:
            return None
        data = json.loads(raw)
    except (ValueError, zlib.error, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def decode(text: Any) -> AppliedRecord | None:
    """The record in ``text``, or None when there is none or it is not one of ours."""
    if not isinstance(text, str) or len(text) > MAX_RECORD_CHARS:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    version, written, summary = data.get("ftspec"), data.get("written"), data.get("summary")
    defaults = _defaults(data.get("defaults"))
    if not isinstance(version, str) or not isinstance(written, str) or defaults is None:
        return None
    if not isinstance(summary, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in summary.items()):
        summary = {}
    return AppliedRecord(version, written, defaults, summary, from_record(data.get("inputs")))


def legacy_summary(text: Any) -> dict[str, str]:
    """The ML summary an older ftspec wrote under its own key (``ftspec.dev/summary``)."""
    try:
        data = json.loads(text) if isinstance(text, str) and len(text) < MAX_RECORD_CHARS \
            else None
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def applied_summary(meta: dict[str, Any], legacy_key: str) -> dict[str, str]:
    """The ML summary a job was applied with, from its metadata: the applied record's, else
    the one an older ftspec wrote under ``legacy_key``; empty when neither is there."""
    applied = decode(meta.get(RECORD_KEY))
    if applied is not None and applied.summary:
        return dict(applied.summary)
    return legacy_summary(meta.get(legacy_key))


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def moved_defaults(old: AppliedRecord, new: AppliedRecord) -> list[tuple[str, Any, Any]]:
    """(path, old, new) for each default the applied run had that this ftspec changed."""
    out = []
    for path, value in sorted(old.defaults.items()):
        if path in new.defaults and new.defaults[path] != value:
            out.append((path, value, new.defaults[path]))
    return out


LEGACY_NOTE = ("applied by an older ftspec, which kept no record of the spec as written: if "
               "the spec did not change, this change comes from the ftspec upgrade (to "
               "ftspec {version}); the next apply records what is needed to tell")


def upgrade_note(record: AppliedRecord | None, now: Job | AppliedRecord, *,
                 legacy: bool = False) -> str | None:
    """Why what would run differs although the spec as written does not: a new ftspec.

    ``record``: what was applied; ``now``: the Job planned (or its record); ``legacy``: the
    run was applied by an ftspec that wrote no record (it cannot be told apart from the
    user's own change, and the note says so). None when there is no record or the user
    changed the spec (then the change is theirs)."""
    new = record_of(now) if isinstance(now, Job) else now
    if record is None:
        return LEGACY_NOTE.format(version=new.ftspec) if legacy else None
    if record.written != new.written:
        return None
    versions = (f"ftspec {record.ftspec} -> {new.ftspec}" if record.ftspec != new.ftspec
                else f"ftspec {new.ftspec}, another build")
    moved = moved_defaults(record, new)
    if not moved:
        return (f"the spec is unchanged since it was applied: the change comes from the "
                f"ftspec upgrade ({versions}), which compiles it differently")
    parts = [f"{path} {_show(old)} -> {_show(value)}" for path, old, value in moved]
    pins = ", ".join(f"{path}: {_show(old)}" for path, old, _ in moved)
    return (f"the spec is unchanged since it was applied: the change comes from the ftspec "
            f"upgrade ({versions}), whose defaults changed: {'; '.join(parts)}; to keep the "
            f"old run, pin it in the spec ({pins})")
