"""torchtune model builders -> ftspec model families, read from the shipped configs.

Each catalog family with torchtune configs (``ModelFamily.torchtune``) names a config folder
and size; the builders those configs instantiate (``torchtune.models.llama3_2.lora_llama3_2_1b``
and its full/QLoRA siblings) identify the family. Reading the shipped YAML keeps this table
in step with the installed torchtune instead of a hand-written copy.
"""

from __future__ import annotations

from functools import lru_cache

from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.targets.torchtune_configs import configs_dir, load_config

PEFT_PREFIXES = ("qlora_", "lora_")


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
