"""The source mapping of ``ftspec import trl``: TRL's (or fms-hf-tuning's) keys with renamed
keys resolved, each key marked as used when read, and each value's origin."""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.compiler.importers.trl_defaults import (
    FMS_KEYS,
    FMS_MODEL_DEFAULTS,
    FMS_SFT_DEFAULTS,
    FMS_TOOL,
    LEGACY_KEYS,
    MODEL_DEFAULTS,
    SFT_DEFAULTS,
    TOOL,
)


def is_fms(data: dict[str, Any]) -> bool:
    """fms-hf-tuning's JSON (same flat keys, its own data and PEFT keys) by its content."""
    return any(k in data for k in ("training_data_path", "peft_method",
                                   "accelerate_launch_args", "use_flash_attn"))


def hub_or_file_uri(name: str) -> str:
    if name.startswith(("/", "./", "../", "~")):
        return "file://" + name
    return "hf://" + name


class Reader:
    """The source mapping with legacy names resolved and each key marked as used."""

    def __init__(self, draft: SpecDraft) -> None:
        self.draft = draft
        self.data: dict[str, Any] = draft.source.data
        self.used: set[str] = set()
        self.fms = is_fms(self.data)
        self.tool = FMS_TOOL if self.fms else TOOL
        self.sft = FMS_SFT_DEFAULTS if self.fms else SFT_DEFAULTS
        self.model = FMS_MODEL_DEFAULTS if self.fms else MODEL_DEFAULTS
        self.aliases: dict[str, str] = dict(FMS_KEYS) if self.fms else {}
        """Another tool's key -> the TRL name it is read as (fms-hf-tuning, axolotl)."""

    def key(self, name: str) -> str | None:
        if name in self.data:
            return name
        for alias, trl_name in self.aliases.items():
            if trl_name == name and alias in self.data:
                return alias
        for old, new in LEGACY_KEYS.items():
            if new == name and old in self.data:
                return old
        return None

    def has(self, name: str) -> bool:
        return self.key(name) is not None

    def value(self, name: str, defaults: dict[str, Any] | None = None) -> Any:
        k = self.key(name)
        if k is not None:
            self.used.add(k)
            return self.data[k]
        return (defaults or {}).get(name)

    def origin(self, name: str) -> str:
        k = self.key(name)
        if k is None:
            return f"{self.tool} default ({name})"
        at = self.draft.origin_of((k,))
        return at if k == name else f"{at} ({k}, read as {name})"

    def put(self, dst: tuple[str, ...], name: str, defaults: dict[str, Any] | None = None,
            convert: Any = None) -> Any:
        value = self.value(name, defaults)
        if value is None:
            return None
        self.draft.put(dst, convert(value) if convert else value, self.origin(name))
        return value
