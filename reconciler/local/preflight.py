"""Plan-time preflight of a local run: what would make it fail before its first step.

Checked without starting anything, each failure a diagnostic at the spec field
(``FILE:LINE:COL``):

- every ``file://`` input exists and can be read: the model folder holds a config and
  weights (a safetensors file's header must parse: a truncated or corrupt file fails here),
  the tokenizer (loaded: ``tokcheck``; a corrupt file fails here), the special tokens,
  every dataset file (its first rows parse as the loader reads them and hold the values
  the format needs; with ``check_data``, ``plan --check-data``, every row: ``datascan``),
  a ``resume_from`` folder (and what torchtune resumes from in it: ``resume_check``);
  a model folder that holds a LoRA adapter and no base weights;
- a ``data.train`` JSON Lines file without ``num_examples``: its counted rows fill a global
  batch where the launcher drops the partial one (``compiler.checks.zero_steps``, the rule
  a declared ``num_examples`` meets at compile time);
- the launcher and the packages it imports are installed (found, not imported: importing
  torch costs seconds);
- the output folder (and the run folder under ``deploy.local.workdir``) can be written, and
  its file system has room for the checkpoints the run will save (``checkpoint_bytes``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import sys
from dataclasses import replace
from pathlib import Path

from ftspec.compiler.checks import zero_steps
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.failure import data_text
from ftspec.reconciler.local.datapeek import PeekError, count_rows, first_rows, missing_columns
from ftspec.reconciler.local.datascan import needs, row_problems, scan
from ftspec.reconciler.local.resume_check import WHERE as RESUME
from ftspec.reconciler.local.resume_check import check_resume
from ftspec.reconciler.local.tokcheck import tokenizer_problem
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.dtypes import BYTES
from ftspec.spec.ir import DatasetRows, Job
from ftspec.spec.model.data import Dataset
from ftspec.spec.rows import dataset_rows
from ftspec.spec.rules.data import datasets
from ftspec.spec.urls import scheme
from ftspec.targets.paths import default_paths, local_path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
ADAPTER_PREFIX = "adapter_model."
"""A PEFT or torchtune adapter file: no base weights."""


class _Checks:
    def __init__(self, desired: Desired, root: Path, check_data: bool = False) -> None:
        self.desired = desired
        self.root = root
        self.check_data = check_data
        self.found: list[Diagnostic] = []

    def error(self, path: KeyPath, summary: str, code: str, hint: str | None = None) -> None:
        doc = self.desired.doc
        span = doc.span_of(path) if doc is not None else None
        self.found.append(Diagnostic(Severity.ERROR, summary, path=path, span=span, hint=hint,
                                     code=f"preflight.{code}"))

    def path_of(self, uri: str) -> Path:
        return self.at(local_path(uri))

    def at(self, where: str) -> Path:
        """A path as the launcher sees it: relative ones from the project root (the
        launcher's working directory, ``reconciler.project``)."""
        path = Path(where)
        return path if path.is_absolute() else self.root / path


def preflight(desired: Desired, root: Path, *, check_data: bool = False) -> list[Diagnostic]:
    """Every problem found with ``desired``'s local run (empty: nothing found);
    ``check_data``: every row of the local datasets is checked, not the first ones."""
    checks = _Checks(desired, root, check_data)
    job = desired.job
    spec = job.spec
    _model(checks, spec.model.uri)
    tok = spec.model.tokenizer
    for key, uri in (("uri", tok.uri), ("special_tokens_uri", tok.special_tokens_uri)):
        if uri and scheme(uri) == "file":
            found = _readable(checks, ("model", "tokenizer", key), uri, "tokenizer")
            if found is not None and key == "uri" and found.is_file():
                _tokenizer(checks, ("model", "tokenizer", "uri"), found)
    if not tok.uri and scheme(spec.model.uri) == "file":
        bundled = checks.path_of(spec.model.uri) / "tokenizer.json"
        if bundled.is_file():  # read from the model folder
            _tokenizer(checks, ("model", "uri"), bundled)
    for path, ds in datasets(spec):
        _dataset(checks, path, ds, job.row_format.at(path) or dataset_rows(ds, path))
    _counted_rows(checks, job)
    resume = spec.training.checkpointing.resume_from
    if resume and scheme(resume) == "file":
        check_resume(job, checks.path_of(resume),
                     lambda summary, code, hint: checks.error(RESUME, summary, code, hint))
    _launcher(checks, job)
    _output(checks, job)
    return checks.found


def _readable(checks: _Checks, path: KeyPath, uri: str, what: str) -> Path | None:
    where = checks.path_of(uri)
    if not where.exists():
        tiny = ".ftspec/tiny/" in uri
        checks.error(path, f"the {what} {where} does not exist", "missing",
                     hint="run `ftspec quickstart` first: it writes the tiny model and data"
                     if tiny else "fix the path (relative paths are read from the project "
                     f"root {checks.root})")
        return None
    try:
        if where.is_file():
            with where.open("rb") as fh:
                fh.read(1)
        else:
            os.listdir(where)
    except OSError as exc:
        checks.error(path, f"the {what} {where} cannot be read: {exc.strerror or exc}",
                     "unreadable", hint="fix its permissions")
        return None
    return where


def _tokenizer(checks: _Checks, path: KeyPath, file: Path) -> None:
    try:
        problem = tokenizer_problem(file)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem:
        checks.error(path, f"the tokenizer {file} cannot be loaded: {problem}", "bad-tokenizer",
                     hint="the file is truncated or corrupt: copy it again from the model")


def _model(checks: _Checks, uri: str) -> None:
    if scheme(uri) != "file":
        return
    path: KeyPath = ("model", "uri")
    folder = _readable(checks, path, uri, "model folder")
    if folder is None:
        return
    if not folder.is_dir():
        checks.error(path, f"the model {folder} is a file; the launchers read a folder with "
                     "the config and the weights", "not-a-folder",
                     hint="point model.uri at the folder that holds config.json")
        return
    config = folder / "config.json"
    if not config.is_file():
        checks.error(path, f"the model folder {folder} has no config.json", "no-config",
                     hint="copy the model's config.json beside its weights")
    else:
        try:
            json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            checks.error(path, f"{config} is not valid JSON: {exc}", "bad-config")
    weights = sorted(p for p in folder.iterdir() if p.name.endswith(WEIGHT_SUFFIXES)
                     and not p.name.startswith(ADAPTER_PREFIX))
    if not weights and any(p.name.startswith(ADAPTER_PREFIX) for p in folder.iterdir()):
        checks.error(path, f"the model folder {folder} holds a LoRA adapter and no base "
                     "weights: model.uri is the model the adapter trains on", "adapter-only",
                     hint="keep model.uri at the base model; to train on from this "
                     "checkpoint, set training.checkpointing.resume_from to this folder")
    elif not weights:
        checks.error(path, f"the model folder {folder} holds no weights (*.safetensors, *.bin)",
                     "no-weights", hint="download or copy the model's weight files there")
    for file in weights:
        problem = _safetensors_problem(file) if file.suffix == ".safetensors" else None
        if problem:
            checks.error(path, f"the weights {file} are unreadable: {problem}", "bad-weights",
                         hint="the file is truncated or corrupt: download it again")


def _safetensors_problem(file: Path) -> str | None:
    """A safetensors file starts with its header's length and a JSON header that names
    every tensor's byte range; the last range must end at the end of the file."""
    try:
        size = file.stat().st_size
        with file.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                return "shorter than a safetensors header"
            (length,) = struct.unpack("<Q", raw)
            if length > min(size - 8, 100 << 20):
                return "the header length is larger than the file"
            header = json.loads(fh.read(length))
    except (OSError, ValueError) as exc:
        return f"the header does not parse ({exc})"
    if not isinstance(header, dict):
        return "the header is not a JSON object"
    ends = [int(v["data_offsets"][1]) for k, v in header.items()
            if k != "__metadata__" and isinstance(v, dict)
            and isinstance(v.get("data_offsets"), list) and len(v["data_offsets"]) == 2]
    expected = 8 + length + max(ends, default=0)
    if expected != size:
        return f"the header describes {expected} bytes, the file has {size}"
    return None


def _dataset(checks: _Checks, path: KeyPath, ds: Dataset, layout: DatasetRows) -> None:
    if scheme(ds.uri) != "file":
        return
    where = _readable(checks, (*path, "uri"), ds.uri, "dataset")
    if where is None or where.is_dir():
        return
    if checks.check_data:
        _every_row(checks, path, ds, where, layout)
        return
    try:
        rows = first_rows(where, ds.loader)
    except (OSError, PeekError) as exc:
        checks.error((*path, "uri"), f"the dataset {where} does not parse: {exc}", "bad-rows",
                     hint="fix the file, or set the loader that reads it")
        return
    if rows is None:
        return
    for column, field, number in missing_columns(layout, rows):
        have = ", ".join(sorted(rows[number - 1])) or "none"
        checks.error((*path, *field), f"row {number} of {where} has no column {column!r} "
                     f"(format {ds.format}; its columns: {have})", "missing-column",
                     hint="point it at one of the dataset's columns" if field[0] != "format" else
                     f"map it to a column of the dataset: column_map: {{{column}: <column>}}")
    wanted = needs(layout)
    for number, row in enumerate(rows, 1):
        for column, field, problem, _value in row_problems(wanted, row):
            if problem != "is missing":  # said above, with the row's columns
                checks.error((*path, *field), f"row {number} of {where}: column {column!r} "
                             f"{problem} (format {ds.format})", "bad-value",
                             hint="fix the row or drop it; `ftspec plan --check-data` checks "
                             "every row")


def _every_row(checks: _Checks, path: KeyPath, ds: Dataset, where: Path,
               layout: DatasetRows) -> None:
    """``plan --check-data``: each problem row (up to ``datascan.MAX_PROBLEMS``) an error
    at the spec field that asks for its column."""
    try:
        found = scan(where, ds, layout=layout)
    except OSError as exc:
        checks.error((*path, "uri"), f"the dataset {where} cannot be read: "
                     f"{exc.strerror or exc}", "unreadable")
        return
    if found.unreadable:
        checks.error((*path, "uri"), f"the dataset {where} does not parse: {found.unreadable}",
                     "bad-rows", hint="fix the file, or set the loader that reads it")
    for number, p in enumerate(found.problems, 1):
        more = found.more if number == len(found.problems) else 0
        summary = data_text(p.to_json(str(where), path), field=False)
        checks.error((*path, *p.field), f"{summary} (format {ds.format})", "bad-value",
                     hint=(f"{more} more problem(s) in later rows; " if more else "")
                     + "fix the rows or drop them (the launcher fails when a step reaches one)")


def _counted_rows(checks: _Checks, job: Job) -> None:
    """A ``data.train`` file without ``num_examples``: its rows counted here (JSON Lines),
    checked by the rule the declared size meets at compile time (``zero_steps``)."""
    ds = job.spec.data.train
    if ds is None or ds.num_examples is not None or scheme(ds.uri) != "file":
        return
    where = checks.path_of(ds.uri)
    try:
        rows = count_rows(where, ds.loader) if where.is_file() else None
    except OSError:
        return  # unreadable: _dataset said so
    if rows is None:
        return
    doc = checks.desired.doc
    for found in zero_steps(job, rows, f"the rows of {where}, counted at plan"):
        checks.found.append(replace(found, span=doc.span_of(found.path) if doc else None))


def _launcher(checks: _Checks, job: Job) -> None:
    facts = job.launcher_facts
    needed = list(facts.packages)
    if job.spec.method.kind != "full":  # every adapter method trains through PEFT
        needed += facts.adapter_packages
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        checks.error(("launcher",), f"the {job.launcher} launcher needs "
                     f"{', '.join(missing)}, not installed for {sys.executable}",
                     "launcher-missing",
                     hint=f"pip install '{facts.install}'")


def checkpoint_bytes(job: Job) -> int:
    """Bytes the run's saves will take: per save the weights it writes (the adapter of a
    PEFT method, plus the merged model unless the output keeps the adapter only; the whole
    model for full fine-tuning) in the training dtype, times the saves that are kept."""
    spec = job.spec
    dtype = BYTES.get(spec.model.dtype, 2)
    full = int(job.model.params_b * 1e9 * dtype)
    adapter = int(job.memory.trainable_params_b * 1e9 * dtype)
    out = spec.output
    merged = out is not None and (not out.save_adapter_only or out.merge_adapter)
    if spec.method.kind == "full":
        per_save = full
    else:  # the adapter; the merged model too when the output asks for it
        per_save = adapter + (full if merged else 0)
    ckpt = spec.training.checkpointing
    if ckpt.strategy == "steps" and ckpt.steps and job.total_steps:
        saves = max(1, job.total_steps // ckpt.steps)
    elif ckpt.strategy == "epoch":
        saves = spec.training.epochs or 1
    else:
        saves = 1  # the final model
    if ckpt.total_limit:
        saves = min(saves, ckpt.total_limit)
    return per_save * saves


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _output(checks: _Checks, job: Job) -> None:
    spec = job.spec
    out_field: KeyPath = ("output", "uri") if spec.output is not None else (
        "deploy", "local", "workdir")
    if spec.output is not None and scheme(spec.output.uri) != "file":
        return
    target = checks.at(default_paths(job).output_dir)
    for field, folder in ((out_field, target),
                          (("deploy", "local", "workdir"), checks.at(spec.deploy.local.workdir))):
        base = _existing_parent(folder)
        if not base.is_dir():
            checks.error(field, f"{folder} cannot be created: {base} is a file", "not-a-folder")
            return
        if not os.access(base, os.W_OK | os.X_OK) or _read_only(base):
            checks.error(field, f"{folder} cannot be written ({base} is read-only)",
                         "not-writable", hint="choose a folder you can write")
            return
    need = checkpoint_bytes(job)
    free = shutil.disk_usage(_existing_parent(target)).free
    if need > free:
        checks.error(out_field, f"the run will save about {_gib(need)} of checkpoints; the "
                     f"file system of {target} has {_gib(free)} free", "no-space",
                     hint="free some space, write elsewhere, or keep fewer checkpoints "
                     "(training.checkpointing.total_limit)")


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**27 else f"{n / 2**20:.1f} MiB"
