"""A config's DeepSpeed settings as ``distributed.deepspeed``.

A config names its DeepSpeed JSON by path (or gives it inline). Where the file can be read —
below the config's folder or a folder above it (LLaMA-Factory's ``examples/deepspeed/…``
is relative to the repository root it runs from), or the working folder — or the mapping
is inline, its ZeRO stage
(``zero_optimization.stage``) and offload devices (``offload_optimizer.device``,
``offload_param.device``) are read from it, and any other setting that is not ``auto`` is a
warning (the spec derives batch, precision and clipping from its own fields). A file that
cannot be read but whose name the tool ships maps by name to that file's stage and offload;
anything else is a warning at its line.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import KeyPath

Shipped = dict[str, tuple[int, str, str]]
"""file name -> (ZeRO stage, offload_optimizer, offload_params)."""


def put_deepspeed(draft: SpecDraft, src: KeyPath, value: Any, shipped: Shipped,
                  tool: str) -> None:
    settings = value if isinstance(value, dict) else read_json(draft, value)
    if settings is not None:
        _from_json(draft, src, settings, "inline" if isinstance(value, dict) else str(value))
        return
    if not isinstance(value, str):
        draft.warn(src, "deepspeed: not a file name or a mapping; set distributed.deepspeed "
                   "by hand")
        return
    name = PurePosixPath(value).name
    if name not in shipped:
        ships = (f"not one of {tool}'s shipped files ({', '.join(sorted(shipped))})"
                 if shipped else f"{tool} ships none")
        draft.warn(src, f"deepspeed {value}: the file is not readable here and {ships}; set "
                   "distributed.deepspeed by hand (or import beside the file)")
        return
    stage, opt, params = shipped[name]
    at = f"{draft.origin_of(src)} ({tool}'s {name})"
    draft.put(("distributed", "strategy"), "deepspeed", at)
    draft.put(("distributed", "deepspeed", "stage"), stage, at)
    if opt != "none":
        draft.put(("distributed", "deepspeed", "offload_optimizer"), opt, at)
    if params != "none":
        draft.put(("distributed", "deepspeed", "offload_params"), params, at)


_OFFLOAD = {"cpu": "cpu", "nvme": "nvme", "none": "none"}
_ZERO_READ = {"stage", "offload_optimizer", "offload_param"}


def read_json(draft: SpecDraft, value: Any, what: str = "DeepSpeed config"
              ) -> dict[str, Any] | None:
    """The JSON mapping at ``value`` (``what``: a DeepSpeed or FSDP config, for messages):
    a relative path is looked up from the config's
    folder upwards (a tool run from its repository root names ``examples/deepspeed/…``),
    then from the working folder; read as untrusted input (``launch_script.read_found``:
    no symbolic link followed, size-limited)."""
    import json
    from pathlib import Path

    from ftspec.compiler.importers.launch_script import read_found

    if not isinstance(value, str) or not value.strip():
        return None
    given = Path(value)
    here = Path(draft.source.file).parent.resolve()
    roots = [Path("/")] if given.is_absolute() else [here, *list(here.parents)[:8], Path.cwd()]
    for root in roots:
        if given.is_absolute() or (root / given).exists():
            text, _why = read_found(given, root, what)
            try:
                data = json.loads(text) if text is not None else None
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _from_json(draft: SpecDraft, src: KeyPath, cfg: dict[str, Any], what: str) -> None:
    zero = cfg.get("zero_optimization")
    zero = zero if isinstance(zero, dict) else {}
    stage = zero.get("stage", 0)
    if stage not in (0, 1, 2, 3):
        draft.warn(src, f"deepspeed {what}: zero_optimization.stage {stage!r} is not 0-3; "
                   "set distributed.deepspeed by hand")
        return
    at = f"{draft.origin_of(src)} (read from {what})"
    draft.put(("distributed", "strategy"), "deepspeed", at)
    draft.put(("distributed", "deepspeed", "stage"), stage, at)
    for key, spec_key in (("offload_optimizer", "offload_optimizer"),
                          ("offload_param", "offload_params")):
        device = (zero.get(key) or {}).get("device") if isinstance(zero.get(key), dict) \
            else None
        if device in ("cpu", "nvme"):
            draft.put(("distributed", "deepspeed", spec_key), _OFFLOAD[device], at)
    ignored = sorted([f"zero_optimization.{k}" for k, v in zero.items()
                      if k not in _ZERO_READ and v != "auto"]
                     + [k for k, v in cfg.items() if k != "zero_optimization"
                        and v != "auto" and not (isinstance(v, dict) and all(
                            x == "auto" for x in v.values()))])
    if ignored:
        draft.warn(src, f"deepspeed {what}: {', '.join(ignored[:6])}"
                   + (" ..." if len(ignored) > 6 else "") + " not imported (the spec "
                   "reads the ZeRO stage and offload; batch, precision and clipping come from "
                   "its own fields)")
