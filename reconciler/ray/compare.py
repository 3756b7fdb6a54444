"""What a Ray job runs, comparable across submissions and ftspec versions.

A submission's id is a digest of its content and also appears inside it (the run folder
``/tmp/ftspec/<id>``). Two submissions run the same when, with the id put aside, they have
the same entrypoint, the same runtime environment (variables, with the launcher's files
unpacked from ``FTSPEC_FILES`` and ftspec's header comments dropped; pip packages) and ask
for the same resources. Nothing else takes part: not the id itself, not ftspec's metadata
(version, spec hash of an older ftspec, ML summary). So a new ftspec that submits the same
run plans no change, although its id for it may differ; the live job is kept.

Live jobs are read back from the cluster, so their fields are untrusted: a value of the
wrong shape or an undecodable variable compares as itself (and so as a change), never as
an error.
"""

from __future__ import annotations

import base64
from typing import Any

from ftspec.reconciler.answers import AnswerRefused, parse_json
from ftspec.reconciler.model import FieldChange
from ftspec.runtime.ray_nodes.wire import NODES_ENV
from ftspec.targets.base import without_generated_lines
from ftspec.targets.ray_payload import FILES_ENV

ID = "{submission_id}"
RESOURCE_KEYS = ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory",
                 "entrypoint_resources")


def _unid(value: Any, sid: str) -> Any:
    if isinstance(value, str):
        return value.replace(sid, ID) if sid else value
    if isinstance(value, dict):
        return {k: _unid(v, sid) for k, v in value.items()}
    if isinstance(value, list):
        return [_unid(v, sid) for v in value]
    return value


def _b64json(text: str) -> Any:
    """A live job's base64 JSON (its run files), within ``answers``' bounds; None if not."""
    try:
        return parse_json(base64.b64decode(text, validate=True), "a job's run files")
    except (ValueError, TypeError, AnswerRefused):
        return None


def _pip(value: Any) -> Any:
    """Ray may hand the pip list back as ``{"packages": [...], ...}``."""
    if isinstance(value, dict) and isinstance(value.get("packages"), list):
        return list(value["packages"])
    return value or []


def run_view(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` (a Jobs API submission or a listed job) as what it runs, by path."""
    sid = str(job.get("submission_id") or "")
    raw_env = job.get("runtime_env")
    runtime_env: dict[str, Any] = raw_env if isinstance(raw_env, dict) else {}
    raw_vars = runtime_env.get("env_vars")
    env_vars: dict[str, Any] = raw_vars if isinstance(raw_vars, dict) else {}
    view: dict[str, Any] = {"entrypoint": _unid(job.get("entrypoint"), sid),
                            "pip": _pip(runtime_env.get("pip"))}
    for key, value in sorted(env_vars.items()):
        decoded = _b64json(value) if key in (FILES_ENV, NODES_ENV) and \
            isinstance(value, str) else None
        if key == FILES_ENV and isinstance(decoded, dict):
            for name, text in sorted(decoded.items()):
                view[f'files["{name}"]'] = without_generated_lines(text) \
                    if isinstance(text, str) else text
        elif key == NODES_ENV and decoded is not None:
            view[f'env["{key}"]'] = _unid(decoded, sid)
        else:
            view[f'env["{key}"]'] = _unid(value, sid)
    for key in RESOURCE_KEYS:
        if job.get(key) not in (None, {}, 0):
            view[key] = job.get(key)
    return view


def run_changes(live: dict[str, Any], desired: dict[str, Any]) -> list[FieldChange]:
    """What differs between the live job's run and the desired submission's (each forces a
    replace: Ray jobs are immutable)."""
    old, new = run_view(live), run_view(desired)
    return [FieldChange(key, old.get(key), new.get(key), True)
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
