"""What TRL's own argument parser reads from a ``trl sft`` YAML, and a spec's compiled files.

Shared by the importer tests that compare a source config with the compiled ``sft.yaml``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ftspec.compiler.importers.trl_defaults import LEGACY_KEYS
from ftspec.compiler.pipeline import CompileOptions, compile_spec
from ftspec.spec.loader import parse_yaml
from ftspec.targets.accelerate_sft import ONE_MODULE


def compiled_files(spec_text: str, name: str, target: str = "accelerate") -> dict[str, Any]:
    """The compiled command artifact's files (``sft.yaml``, ``accelerate.yaml``, ...), with
    ``prepare.json`` parsed (``{}`` when absent)."""
    compiled = compile_spec(parse_yaml(spec_text, f"{name}.ftspec.yaml"), "artifacts",
                            CompileOptions(target=target))
    assert compiled.ok, [d.format() for d in compiled.diagnostics if d.is_error]
    command = next(a for a in compiled.artifacts if a.kind == "command")
    assert isinstance(command.obj, dict)
    files: dict[str, Any] = dict(command.obj["files"])
    files["prepare.json"] = json.loads(files.get("prepare.json", "{}"))
    return files


def trl_reads(text: str | dict[str, Any]) -> tuple[Any, Any, Any, dict[str, Any]]:
    """TRL's ``ScriptArguments``, ``SFTConfig``, ``ModelConfig`` read from a YAML text (or a
    mapping), renamed keys under their current names, and the raw mapping."""
    import trl
    from ruamel.yaml import YAML
    from transformers import HfArgumentParser

    raw = dict(YAML(typ="safe").load(text)) if isinstance(text, str) else dict(text)
    for old, new in LEGACY_KEYS.items():
        if old in raw and new not in raw:
            raw[new] = raw.pop(old)
    raw["use_cpu"] = True  # the test machine has no GPU; no hyper-parameter depends on it
    raw.pop("tf32", None)  # TrainingArguments rejects it without a GPU (imported as a warning)
    parser = HfArgumentParser((trl.ScriptArguments, trl.SFTConfig, trl.ModelConfig))
    script, sft, model = parser.parse_dict(raw, allow_extra_keys=True)
    return script, sft, model, raw


def stored_and_computed(sft: Any, model: Any) -> tuple[str, str | None]:
    """(dtype the weights load in, the autocast dtype or None) of a TRL run as TRL reads
    it. Both count: 16-bit weights under autocast of the same dtype store what pure
    precision stores but compute the ops on torch's autocast fp32 list (softmax, norms, the
    loss) in fp32 ("auto": the corpus checkpoints' bf16)."""
    loaded = "bfloat16" if model.dtype == "auto" else str(model.dtype)
    return loaded, "bfloat16" if sft.bf16 else "float16" if sft.fp16 else None


def target_modules(value: str | list[str] | None) -> set[str] | None:
    """``ModelConfig.lora_target_modules`` as a set of names: TRL turns a one-item list into
    the string (``all-linear``, which PEFT reads as a keyword, or the one-name pattern the
    accelerate target writes for a lone module)."""
    if value is None:
        return None
    if isinstance(value, str):
        one = re.fullmatch(re.escape(ONE_MODULE.format("")) + r"(\w+)", value)
        return {one.group(1) if one else value}
    return set(value)


def accelerate_reads(text: str) -> dict[str, Any]:
    """accelerate.yaml through accelerate's own config loader (``ClusterConfig``)."""
    import tempfile
    from pathlib import Path

    from accelerate.commands.config.config_args import ClusterConfig

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "accelerate.yaml"
        path.write_text(text)
        return dict(ClusterConfig.from_yaml_file(str(path)).to_dict())
