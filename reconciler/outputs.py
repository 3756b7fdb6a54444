"""What a run produced: where its outputs are, which checkpoints it wrote, its final metrics.

Read from the run: the output folder's files (when this machine can see it) and the metrics
the launcher logged (``progress.Tracker``); the spec only says where the launcher was told
to write. Layouts understood: torchtune (``epoch_N/`` with ``adapter_model.safetensors`` or
``model-*.safetensors``), Hugging Face / TRL (``checkpoint-N/``, ``adapter_model.safetensors``
or ``model.safetensors`` at the top), TensorBoard event files anywhere below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ftspec.reconciler.model import Status
from ftspec.spec.ir import Job
from ftspec.spec.urls import scheme
from ftspec.targets.paths import default_paths

_CHECKPOINT = re.compile(r"^(?:epoch_|checkpoint-|step_)(\d+)$")
_ADAPTER = ("adapter_model.safetensors", "adapter_model.bin", "adapter_model.pt")
_MODEL = re.compile(r"^(?:model|pytorch_model|ft-model)(?:-\d+-of-\d+)?\.(?:safetensors|bin)$")
_MAX_SCAN = 5000


def location(job: Job) -> dict[str, Any]:
    """Where the launcher was told to write (as the run's machine sees it), and the hub repo."""
    spec = job.spec
    out: dict[str, Any] = {"path": default_paths(job).output_dir}
    if spec.output is not None:
        out["uri"] = spec.output.uri
        out["kind"] = scheme(spec.output.uri)
        if spec.output.push_to_hub:
            out["hub_repo"] = spec.output.push_to_hub
    else:
        out["kind"] = "file"
    return out


def scan(folder: Path, base: Path | None = None, since: float | None = None
         ) -> dict[str, Any]:
    """Checkpoints, the last adapter / model files and TensorBoard runs under ``folder``.

    Paths are given relative to ``base`` (default: as ``folder`` was given). ``since``: the
    run's start (epoch seconds); files older than it are an earlier run's and are skipped."""
    if not folder.is_dir():
        return {"exists": False}
    checkpoints: list[tuple[int, Path]] = []
    adapters: list[Path] = []
    models: list[Path] = []
    events: set[Path] = set()
    for n, path in enumerate(sorted(folder.rglob("*"))):
        if n > _MAX_SCAN:
            break
        if path.is_dir():
            found = _CHECKPOINT.match(path.name)
            if found and _fresh(path, since):
                checkpoints.append((int(found.group(1)), path))
            continue
        if not _fresh(path, since):
            continue
        if path.name in _ADAPTER:
            adapters.append(path)
        elif _MODEL.match(path.name):
            models.append(path)
        elif path.name.startswith("events.out.tfevents."):
            events.add(path.parent)

    def show(p: Path) -> str:
        return str(p if base is None else _relative(p, base))

    order = sorted(checkpoints, key=lambda c: c[0])
    out: dict[str, Any] = {"exists": True,
                           "checkpoints": [show(p) for _, p in order]}
    if adapters:
        out["adapter"] = show(_latest(adapters, order))
    if models:
        out["model"] = show(_latest(models, order).parent)
    if events:
        out["tensorboard"] = sorted(show(p) for p in events)
    return out


def _fresh(path: Path, since: float | None) -> bool:
    try:
        return since is None or path.stat().st_mtime >= since - 1.0
    except OSError:
        return False


def _latest(files: list[Path], checkpoints: list[tuple[int, Path]]) -> Path:
    """The file of the last checkpoint (a file at the top of the output wins: the final one)."""
    rank = {p: i for i, (_, p) in enumerate(checkpoints)}
    return max(files, key=lambda f: (f.parent not in rank, rank.get(f.parent, -1), str(f)))


def _relative(path: Path, base: Path) -> Path:
    try:
        return path.relative_to(base)
    except ValueError:
        return path


def final_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """Train (and eval) loss, steps, tokens and wall time, as the launcher logged them
    (``metrics``: a ``Status.metrics``, i.e. ``Tracker.summary`` plus elapsed time)."""
    out: dict[str, Any] = {}
    if metrics.get("step") is not None:
        out["steps"] = metrics["step"]
    if metrics.get("total_steps") is not None:
        out["total_steps"] = metrics["total_steps"]
    if metrics.get("loss") is not None:
        out["train_loss"] = metrics["loss"]
    if metrics.get("first_loss") is not None:
        out["first_loss"] = metrics["first_loss"]
    final = metrics.get("final") or {}
    if "train_loss" in final:
        out["train_loss_mean"] = final["train_loss"]
    if "train_runtime" in final:
        out["train_runtime_s"] = final["train_runtime"]
    for key in ("eval_loss", "tokens"):
        if metrics.get(key) is not None:
            out[key] = metrics[key]
    if metrics.get("elapsed_s") is not None:
        out["wall_time_s"] = metrics["elapsed_s"]
    return out


def produced(status: Status) -> dict[str, Any]:
    """``ftspec output``: what the run produced, from its status (files seen + metrics)."""
    where = dict(status.outputs)
    out: dict[str, Any] = {"address": status.address, "phase": status.phase.value}
    for key in ("adapter", "model", "checkpoints", "tensorboard"):
        if key in where:
            out[key] = where.pop(key)
    out["location"] = where
    out["metrics"] = final_metrics(status.metrics)
    return out
