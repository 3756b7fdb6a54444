"""How a LLaMA-Factory config is launched, from the files beside it.

LLaMA-Factory runs a train YAML with ``llamafactory-cli train X.yaml``, whose launcher
(``llamafactory/launcher.py``) starts ``torchrun`` when ``FORCE_TORCHRUN`` is set or more
than one device is visible, with ``NPROC_PER_NODE`` processes (default: one per visible
device) on ``NNODES`` nodes; its FSDP examples run ``accelerate launch --config_file
examples/accelerate/….yaml src/train.py X.yaml`` from a ``train.sh`` beside the YAML (or
show it in the YAML's usage comment). The import looks, in order, at the script given with
``--launch FILE``, the shell scripts beside the YAML whose command names it, and the YAML's
own usage comment; it reads the command's environment (``CUDA_VISIBLE_DEVICES``,
``FORCE_TORCHRUN``, ``NPROC_PER_NODE``, ``NNODES``) and launcher options (``accelerate
launch``'s, ``torchrun --nproc_per_node / --nnodes``, ``deepspeed --num_gpus /
--num_nodes``), and the accelerate config the command names (``--accelerate-config FILE``
replaces it). A relative ``--config_file`` is looked up from the YAML's folder upwards (the
folder LLaMA-Factory runs from holds ``examples/``), then beside the script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.compiler.importers.launch_accelerate import Launched, Setting, put_accelerate
from ftspec.compiler.importers.launch_accelerate import warn_at as _warn
from ftspec.compiler.importers.launch_script import (
    Command,
    Word,
    commands,
    names_config,
    read_found,
    scripts_beside,
    usage_commands,
)
from ftspec.compiler.importers.topology import ASSUMED_GPUS
from ftspec.spec.diagnostics import Diagnostic, Severity, Span

MAX_LEVELS = 8
"""Folders walked up from the YAML to find a launcher's relative ``--config_file``."""
ENABLED = ("true", "y", "1")
"""LLaMA-Factory's ``is_env_enabled``: these values (any case) turn a switch on."""


@dataclass(frozen=True)
class Topology:
    """Processes per node and nodes, each with the line it came from (None: not said)."""

    nproc: int | None = None
    nproc_origin: str = "--nproc-per-node"
    nnodes: int | None = None
    nnodes_origin: str = "--nnodes"
    training: dict[tuple[str, ...], tuple[Any, str]] = field(default_factory=dict)
    """``training.*`` values the launcher fixes (``Launched.training``)."""


def launch_topology(draft: SpecDraft, config: Path, launch: Path | None,
                    accelerate_config: Path | None) -> Topology:
    """Find the launch command, import what it and its accelerate config say, and return
    the topology it fixes."""
    cmd = _command(draft, config, launch)
    if cmd is None and accelerate_config is None:
        return Topology()
    if cmd is None:
        cmd = Command(str(accelerate_config), 1, "accelerate launch")
    env = cmd.env
    visible = _visible(env.get("CUDA_VISIBLE_DEVICES"))
    if cmd.launcher == "accelerate launch":
        launched = _accelerate(draft, config, cmd, accelerate_config)
        return _from_accelerate(draft, cmd, launched, visible)
    if accelerate_config is not None:
        _warn(draft, Span(cmd.file, cmd.line, 1), f"--accelerate-config {accelerate_config}: "
              f"the launch command at {cmd.at()} is {cmd.launcher}, not accelerate launch; "
              "the accelerate config is not read")
    if cmd.launcher == "llamafactory-cli train":
        count, origin = _first(draft, cmd, "NPROC_PER_NODE", env.get("NPROC_PER_NODE"), visible)
        force = env.get("FORCE_TORCHRUN")
        if count is None and force is not None and force.text.lower() in ENABLED:
            count, origin = _assumed(draft, cmd, force, "FORCE_TORCHRUN: llamafactory-cli "
                                     "starts torchrun with one process per visible GPU")
        node_key, nodes = "NNODES", env.get("NNODES")
    else:
        key = "nproc_per_node" if cmd.launcher == "torchrun" else "num_gpus"
        word = cmd.options.get(key)
        if word is not None and word.text in ("gpu", "auto"):
            word = None
        count, origin = _first(draft, cmd, f"--{key}", word, visible)
        if count is None and cmd.launcher == "torchrun" and word is None:
            count, origin = 1, f"from {cmd.at()} (torchrun's default --nproc-per-node 1)"
        elif count is None:
            count, origin = _assumed(draft, cmd, None, f"{cmd.launcher} starts one process "
                                     "per visible GPU")
        node_key = "--nnodes" if cmd.launcher == "torchrun" else "--num_nodes"
        nodes = cmd.options.get(node_key[2:])
    return Topology(count, origin, _count(draft, cmd, nodes, node_key),
                    f"from {cmd.at(nodes)} ({node_key})" if nodes else "--nnodes")


def _first(draft: SpecDraft, cmd: Command, name: str, word: Word | None,
           visible: int | None) -> tuple[int | None, str]:
    """The count a launcher option or variable gives, else the visible GPUs'."""
    count = _count(draft, cmd, word, name)
    if count is not None and word is not None:
        return count, f"from {cmd.at(word)} ({name})"
    devices = cmd.env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and devices is not None:
        return visible, (f"from {cmd.at(devices)} (CUDA_VISIBLE_DEVICES: {cmd.launcher} "
                         "starts one process per visible GPU)")
    return None, ""


def _command(draft: SpecDraft, config: Path, launch: Path | None) -> Command | None:
    """The launch command: from --launch, else a script beside the YAML, else its usage
    comment; several scripts naming the YAML are a warning (the first one is used)."""
    if launch is not None:
        from ftspec.spec.bounded import InputRefused, read_bounded
        from ftspec.spec.diagnostics import SpecError

        try:
            text = read_bounded(launch, 256 * 1024, "launch script").decode("utf-8")
        except (InputRefused, UnicodeDecodeError) as exc:
            raise SpecError([Diagnostic(Severity.ERROR, f"--launch {launch}: "
                             f"{getattr(exc, 'message', 'not UTF-8 text')}",
                             span=Span(str(launch), 1, 1), code="import.launch")]) from None
        found = commands(text, str(launch))
        named = [c for c in found if names_config(c, config)] or found[:1]
        if not named:
            _warn(draft, Span(str(launch), 1, 1), f"--launch {launch}: no accelerate launch, "
                  "torchrun, deepspeed or llamafactory-cli train command in it; not used")
        return named[0] if named else None
    candidates: list[Command] = []
    for script in scripts_beside(config):
        script_text, _why = read_found(Path(script.name), config.parent, "launch script")
        if script_text is not None:
            candidates += [c for c in commands(script_text, _shown(script))
                           if names_config(c, config)]
    if len({c.file for c in candidates}) > 1:
        _warn(draft, Span(candidates[0].file, candidates[0].line, 1), "several scripts beside "
              f"{config.name} launch it ({', '.join(sorted({c.file for c in candidates}))}): "
              f"{candidates[0].at()} is imported", hint="pass --launch FILE to choose")
    if candidates:
        return candidates[0]
    usage = [c for c in usage_commands(draft.source.text, draft.source.file)
             if names_config(c, config, by_name=True)]
    return usage[0] if usage else None


def _accelerate(draft: SpecDraft, config: Path, cmd: Command,
                explicit: Path | None) -> Launched:
    if explicit is not None:
        from ftspec.spec.bounded import InputRefused, read_bounded

        try:
            text = read_bounded(explicit, 256 * 1024, "accelerate config").decode("utf-8")
        except (InputRefused, UnicodeDecodeError) as exc:
            _warn(draft, Span(str(explicit), 1, 1), f"--accelerate-config {explicit}: "
                  f"{getattr(exc, 'message', 'not UTF-8 text')}; not imported")
            return Launched(None, None, None, False)
        return put_accelerate(draft, cmd, explicit, text, str(explicit))
    word = cmd.options.get("config_file")
    if word is None:
        return put_accelerate(draft, cmd, Path("-"), "{}", cmd.file)
    found, shown, why = _find_config(config, Path(cmd.file), word.text)
    if found is None:
        _warn(draft, Span(cmd.file, word.line, 1), f"--config_file {word.text} ({cmd.at(word)})"
              f": {why}; its distributed settings are not imported: the run is imported "
              "without them", hint="pass --accelerate-config FILE")
        return put_accelerate(draft, cmd, Path("-"), "{}", cmd.file)
    return put_accelerate(draft, cmd, Path(word.text), found, shown)


def _find_config(config: Path, script: Path, given: str) -> tuple[str | None, str, str]:
    """(text, the path messages show, why not found) of a launcher's --config_file."""
    rel = Path(given)
    if "$" in given:
        return None, given, "not a literal path (a shell variable)"
    if rel.is_absolute():
        text, why = read_found(rel, Path("/"), "accelerate config")
        return text, given, why or ""
    roots = [config.parent.resolve(), *list(config.parent.resolve().parents)[:MAX_LEVELS]]
    roots.append(script.parent.resolve())
    for root in roots:
        candidate = root / rel
        if candidate.exists() or candidate.is_symlink():
            text, why = read_found(rel, root, "accelerate config")
            return text, _shown(candidate), why or ""
    return None, given, (f"not found in {config.parent} or a folder above it, nor beside "
                         f"{script.name}")


def _from_accelerate(draft: SpecDraft, cmd: Command, launched: Launched,
                     visible: int | None) -> Topology:
    total = _count(draft, cmd, launched.processes)
    machines = _count(draft, cmd, launched.machines) or 1
    if total is not None and total % machines:
        where = launched.processes
        _warn(draft, where.span if where else Span(cmd.file, cmd.line, 1),
              f"num_processes {total} is not a multiple of num_machines {machines}: imported "
              f"as {max(total // machines, 1)} per node")
    nproc = max(total // machines, 1) if total is not None else visible
    devices = cmd.env.get("CUDA_VISIBLE_DEVICES")
    if total is not None and visible is not None and devices is not None and nproc != visible:
        _warn(draft, Span(cmd.file, devices.line, 1), f"CUDA_VISIBLE_DEVICES shows {visible} "
              f"GPUs and num_processes asks for {nproc} per node: accelerate starts {nproc} "
              f"processes, one per GPU index (more than the visible GPUs fail at start); "
              f"imported as {nproc}")
    origin = launched.processes.origin if launched.processes else \
        f"from {cmd.at(cmd.env.get('CUDA_VISIBLE_DEVICES'))} (CUDA_VISIBLE_DEVICES)"
    if nproc is None and launched.shards:
        nproc, origin = _assumed(draft, cmd, None, "accelerate launch starts one process per "
                                 "visible GPU when num_processes is not given")
    if total is not None and machines > 1:
        origin += f" ({total} processes on {machines} machines)"
    precision = launched.mixed_precision
    if precision is not None:
        _precision(draft, precision)
    return Topology(nproc, origin, machines if machines > 1 else None,
                    launched.machines.origin if launched.machines else "--nnodes",
                    launched.training)


def _precision(draft: SpecDraft, given: Setting) -> None:
    """accelerate's mixed precision reaches transformers' Trainer (ACCELERATE_MIXED_PRECISION)
    only when the YAML sets neither bf16 nor fp16; it is checked, not imported."""
    value = str(given.value).lower()
    dtype = draft.get(("model", "dtype"))
    if value in ("no", "none") or dtype in ("bf16", "fp16") and value != "fp8":
        return
    _warn(draft, given.span, f"mixed_precision {value} ({given.origin[5:]}): the YAML sets "
          "neither bf16 nor fp16, so transformers' Trainer keeps accelerate's "
          f"ACCELERATE_MIXED_PRECISION and LLaMA-Factory trains under {value} autocast; the "
          f"spec trains in {dtype}", hint="set model.dtype and model.precision to match")


def _visible(word: Word | None) -> int | None:
    if word is None or not word.text.strip() or "$" in word.text:
        return None
    return len([d for d in word.text.split(",") if d.strip()])


def _count(draft: SpecDraft, cmd: Command, given: Word | Setting | None,
           name: str = "") -> int | None:
    if given is None:
        return None
    text = str(given.text if isinstance(given, Word) else given.value)
    if text.isdigit() and int(text) > 0:
        return int(text)
    span = Span(cmd.file, given.line, 1) if isinstance(given, Word) else given.span
    _warn(draft, span, f"{name or 'count'} {text!r} ({span.file}:{span.line}): not a "
          "literal positive count; not imported")
    return None


def _assumed(draft: SpecDraft, cmd: Command, word: Word | None,
             why: str) -> tuple[int, str]:
    _warn(draft, Span(cmd.file, word.line if word else cmd.line, 1), f"{why}; the count is "
          f"not given, so {ASSUMED_GPUS} GPUs on one node are assumed",
          hint="pass --nproc-per-node N to `ftspec import`, or edit resources.gpus_per_node")
    return int(ASSUMED_GPUS), f"from {cmd.at(word)} ({why}; {ASSUMED_GPUS} assumed)"


def _shown(path: Path) -> str:
    """A path as messages show it: relative to the working folder when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)

