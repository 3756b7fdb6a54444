"""torchtune model builders -> ftspec model families, read from the shipped configs.

Each catalog family with torchtune configs (``ModelFamily.torchtune``) names a config folder
and size; the builders those configs instantiate (``torchtune.models.llama3_2.lora_llama3_2_1b``
and its full/QLoRA siblings) identify the family. Reading the shipped YAML keeps this table
in step with the installed torchtune instead of a hand-written copy.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ftspec.spec.catalog.models import CUSTOM_BASES, MODEL_FAMILIES
from ftspec.targets.torchtune_configs import configs_dir, load_config

if TYPE_CHECKING:
    from ftspec.compiler.importers.base import SpecDraft

PEFT_PREFIXES = ("qlora_", "lora_")
DIMENSIONS = ("vocab_size", "num_layers", "num_heads", "num_kv_heads", "embed_dim",
              "max_seq_len")
"""The component arguments of torchtune's generic ``llama2`` / ``llama3_2`` builders that
``model.architecture`` holds (``intermediate_dim`` too, computed as torchtune does when
the config leaves it out)."""


def split_builder(component: str) -> tuple[str, str]:
    """``torchtune.models.llama3_2.lora_llama3_2_1b`` -> (``lora_``, base builder path)."""
    module, _, name = component.rpartition(".")
    for prefix in PEFT_PREFIXES:
        if name.startswith(prefix):
            return prefix, f"{module}.{name[len(prefix):]}"
    return "", component


@lru_cache(maxsize=1)
def builder_families() -> dict[str, str]:
    """Base builder path -> family key."""
    out: dict[str, str] = {}
    root = configs_dir()
    for key, fam in MODEL_FAMILIES.items():
        if fam.torchtune is None:
            continue
        folder, size = fam.torchtune
        for path in sorted((root / folder).glob(f"{size}_*.yaml")):
            model = load_config(f"{folder}/{path.stem}").get("model")
            component = model.get("_component_") if isinstance(model, dict) else None
            if isinstance(component, str):
                out.setdefault(split_builder(component)[1], key)
    return out


def family_of(component: str) -> str | None:
    return builder_families().get(split_builder(component)[1])


def missing_builder_module(component: str) -> str | None:
    """The ``torchtune.models.<name>`` package a builder lives in when the installed
    torchtune lacks it (torchtune's main branch has Qwen3 and Llama 4 builders that no
    release ships: ``torchtune.models.qwen3``); None when it is there or not a model."""
    parts = component.split(".")
    if len(parts) < 4 or parts[:2] != ["torchtune", "models"]:
        return None
    spec = importlib.util.find_spec("torchtune")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    if any((Path(root) / "models" / parts[2]).is_dir() for root in roots):
        return None
    return ".".join(parts[:3])


def builder_family(component: str) -> str | None:
    """The catalog family a torchtune builder name names, read as a hub id would be
    (``lora_qwen3_0_6b_instruct`` -> ``qwen3-0.6b-instruct`` -> ``qwen3-0.6b``,
    ``qwen3_moe_30b_a3b_instruct`` -> ``qwen3-30b-a3b``); None when none matches."""
    from ftspec.compiler.importers.base import match_family

    name = split_builder(component)[1].rpartition(".")[2]
    name = re.sub(r"(?<=_)(\d+)_(\d+)b", r"\1.\2b", name).replace("_moe_", "_").replace("_", "-")
    found = match_family(name)
    return found[0] if found else None


def custom_architecture(draft: SpecDraft) -> bool:
    """A generic builder (``torchtune.models.llama2.lora_llama2``) with explicit dimensions
    as ``model.architecture`` with its ``base``; False when the component is not one."""
    model = draft.source.data["model"]
    module, _, name = split_builder(str(model["_component_"]))[1].rpartition(".")
    base = next((b for b, m in CUSTOM_BASES.items() if m == module and name == b), None)
    if base is None or not all(isinstance(model.get(k), int) for k in DIMENSIONS):
        return False
    at = draft.origin_of(("model", "_component_"))
    arch = {"base": base, **{k: model[k] for k in DIMENSIONS}}
    inner = model.get("intermediate_dim")
    arch["intermediate_dim"] = inner if isinstance(inner, int) else _mlp_dim(model["embed_dim"])
    draft.put(("model", "architecture"), arch, f"{at} (a {base} builder with its own "
              "dimensions)")
    return True


def _mlp_dim(embed_dim: int, multiple_of: int = 256) -> int:
    """torchtune's ``scale_hidden_dim_for_mlp``: 4 x dim, two thirds of it, rounded up to a
    multiple of 256 (what its llama2 builder uses when intermediate_dim is None)."""
    hidden = int(2 * (4 * embed_dim) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)
