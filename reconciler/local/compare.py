"""Whether a local run would differ from the recorded one: what runs, not how ftspec said it.

Compared: the program (by what it runs), its arguments, the environment ftspec adds, and the
launcher's files (without ftspec's header comments). Not compared: where the interpreter
or a console script is installed (``/venv-a/bin/python -m torchtune._cli.tune`` and
``/venv-b/bin/tune`` run the same program), ftspec's version, hashes of the spec with
defaults. So upgrading ftspec, or running it from another virtualenv, plans no change
unless the run itself would change. A launcher file that parses (YAML, JSON) is compared
key by key, so a change names its keys (``files["config.yaml"].log_every_n_steps``), and
``observational`` tells the keys that change only how a run logs (``OBSERVATIONAL_KEYS``)
from those that change what it trains. ftspec's own entrypoint modules that moved between
releases (``MOVED_MODULES``) are the same program under either name: the local run uses the
installed ftspec, so an old record naming ``ftspec.targets.entrypoints.hf_sft`` runs what
``ftspec.runtime.hf_sft`` runs now. (A cluster's image is another matter: there the module
name is what the image must have, and Ray and Kubernetes plans show it.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ftspec.reconciler.local.launch import PYTHON_PROGRAMS
from ftspec.reconciler.local.record import RunRecord
from ftspec.reconciler.model import FieldChange
from ftspec.targets.base import without_generated_lines

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_MODULES = {module: name for name, module in PYTHON_PROGRAMS.items()}
MOVED_MODULES = (("ftspec.targets.entrypoints.", "ftspec.runtime."),)
"""(old prefix, new prefix) of ftspec's entrypoint packages, oldest first."""


def current_names(text: str) -> str:
    """``text`` with ftspec's moved entrypoint modules named as this release names them."""
    for old, new in MOVED_MODULES:
        text = text.replace(old, new)
    return text


def program(argv: list[str]) -> list[str]:
    """``argv`` with the program named by what it runs: a console script by its name, a
    Python interpreter as ``python``, and ``python -m <launcher's module>`` as the launcher's
    script name (the form ``launch`` picks depends on what is installed beside Python)."""
    if not argv:
        return []
    argv = [current_names(arg) for arg in argv]
    head = os.path.basename(argv[0])
    if _PYTHON.match(head):
        if len(argv) >= 3 and argv[1] == "-m" and argv[2] in _MODULES:
            return [_MODULES[argv[2]], *argv[3:]]
        return ["python", *argv[1:]]
    return [head, *argv[1:]]


def run_changes(record: RunRecord, after: dict[str, Any],
                old_file: Callable[[str], str | None]) -> list[FieldChange]:
    """The differences between the recorded run and ``after`` (``LocalBackend._after``),
    each forcing a replace (a process cannot be changed in place). ``old_file(name)``: a
    launch file the recorded run was started with (``runner.launch_file``: never through a
    link; None when gone)."""
    out: list[FieldChange] = []
    if program(list(record.argv)) != program(list(after["argv"])):
        out.append(FieldChange("argv", record.argv, after["argv"], True))
    old_env, new_env = dict(record.env), dict(after.get("env") or {})
    for key in sorted(set(old_env) | set(new_env)):
        if old_env.get(key) != new_env.get(key):
            out.append(FieldChange(f'env["{key}"]', old_env.get(key), new_env.get(key), True))
    files: dict[str, str] = after.get("files") or {}
    for name, new in sorted(files.items()):
        old = old_file(name)
        if old is None or not same_file(old, new):
            out += file_changes(name, old, new)
    return out


OBSERVATIONAL_KEYS = frozenset({
    # torchtune's recipe config
    "log_every_n_steps", "log_peak_memory_stats", "log_level", "metric_logger",
    # the HF Trainer's arguments (accelerate / TRL, fms-hf-tuning)
    "logging_steps", "logging_strategy", "logging_first_step", "logging_dir", "report_to",
    "disable_tqdm", "run_name",
})
"""Top-level keys of a launcher file that change only what a run logs and where (cadence,
trackers, progress bars), never what it trains: a finished run is not trained again for
them (``LocalBackend``)."""


def observational(change: FieldChange) -> bool:
    """``change`` is a launcher-file key that only changes how the run logs."""
    match = re.match(r'^files\["[^"]+"\]\.([^.\[]+)', change.path)
    return bool(match) and match.group(1) in OBSERVATIONAL_KEYS  # type: ignore[union-attr]


def file_changes(name: str, old: str | None, new: str) -> list[FieldChange]:
    """One row per changed key where both versions of launcher file ``name`` parse as a
    mapping (YAML or JSON, ftspec's header comments aside); else one row for the file."""
    whole = [FieldChange(f'files["{name}"]', old, new, True)]
    if old is None:
        return whole
    before, after = _parsed(name, old), _parsed(name, new)
    if before is None or after is None:
        return whole
    from ftspec.reconciler.fielddiff import diff

    return [FieldChange(f'files["{name}"].{path}', a, b, True)
            for path, a, b in diff(before, after)] or whole


def _parsed(name: str, text: str) -> dict[str, Any] | None:
    """A launcher file's content as data (safe loaders only; None: not a mapping)."""
    import json

    body = without_generated_lines(current_names(text))
    try:
        if name.endswith(".json"):
            data = json.loads(body)
        elif name.endswith((".yaml", ".yml")):
            from ruamel.yaml import YAML

            data = YAML(typ="safe", pure=True).load(body)
        else:
            return None
    except Exception:  # noqa: BLE001 - a file that does not parse is compared as text
        return None
    return data if isinstance(data, dict) else None


def same_file(old: str, new: str) -> bool:
    """A recorded launch file runs what ``new`` runs (ftspec's header comments and moved
    module names aside)."""
    return without_generated_lines(current_names(old)) == without_generated_lines(new)
