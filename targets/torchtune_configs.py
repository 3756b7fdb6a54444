"""torchtune's shipped recipe configs, read as data, and the overrides applied to them.

The configs live in the installed ``recipes`` package (``recipes/configs/<folder>/<name>.yaml``).
``importlib.util.find_spec`` locates it without executing it, so compiling never imports
torchtune (which imports torch, seconds). The YAML is read with ruamel (YAML 1.2).

An override is either ``Set(key, value)`` (``key=value`` on the ``tune run`` command line)
or ``Remove(key)`` (``~key``, torchtune's removal syntax, for keys of a component that is
being replaced). ``resolve`` applies them in the order torchtune does: removals first,
then the sets merged over the result.
"""

from __future__ import annotations

import copy
import importlib.util
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML


@dataclass(frozen=True)
class Set:
    key: str
    value: Any

    def cli(self) -> str:
        return f"{self.key}={format_value(self.value)}"


@dataclass(frozen=True)
class Remove:
    key: str

    def cli(self) -> str:
        return f"~{self.key}"


Override = Set | Remove


class TorchtuneMissing(RuntimeError):
    """torchtune (its ``recipes`` package) is not installed."""


@lru_cache(maxsize=1)
def configs_dir() -> Path:
    spec = importlib.util.find_spec("recipes")
    if spec is None or not spec.submodule_search_locations:
        raise TorchtuneMissing("torchtune is not installed (no `recipes` package)")
    root = Path(next(iter(spec.submodule_search_locations))) / "configs"
    if not root.is_dir():
        raise TorchtuneMissing(f"torchtune's recipe configs are missing ({root})")
    return root


def torchtune_installed() -> bool:
    try:
        configs_dir()
    except TorchtuneMissing:
        return False
    return True


def config_exists(name: str) -> bool:
    """``llama3_2/1B_lora`` -> is ``recipes/configs/llama3_2/1B_lora.yaml`` shipped?"""
    return (configs_dir() / f"{name}.yaml").is_file()


@lru_cache(maxsize=64)
def _parsed(path: Path, mtime_ns: int, size: int) -> Any:
    """One parse per file version and process (a plan over 50 specs reads one config)."""
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def load_config(name: str) -> dict[str, Any]:
    """A fresh, plain-dict copy of a shipped config."""
    path = configs_dir() / f"{name}.yaml"
    stat = path.stat()
    data = _parsed(path, stat.st_mtime_ns, stat.st_size)
    if not isinstance(data, dict):
        raise TypeError(f"torchtune config {name} is not a mapping")
    return copy.deepcopy(data)


def get_path(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def has_path(data: dict[str, Any], key: str) -> bool:
    try:
        get_path(data, key)
    except KeyError:
        return False
    return True


def resolve(base: dict[str, Any], overrides: list[Override]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for op in overrides:
        if isinstance(op, Remove):
            *parents, last = op.key.split(".")
            node = out
            for part in parents:
                node = node[part]
            del node[last]
    for op in overrides:
        if isinstance(op, Set):
            *parents, last = op.key.split(".")
            node = out
            for part in parents:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[last] = copy.deepcopy(op.value)
    return out


def dump_yaml(data: dict[str, Any]) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def format_value(value: Any) -> str:
    """A value as torchtune's command line parses it (OmegaConf dotlist, YAML scalars)."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    text = str(value)
    if not _reads_back_as(text):
        return "'" + text.replace("'", "''") + "'"
    return text


@lru_cache(maxsize=1024)
def _reads_back_as(text: str) -> bool:
    """Does ``text`` read back (YAML scalar) as the same string? (Text that is not one
    YAML document, e.g. with a ``---`` line, does not.)"""
    from ruamel.yaml.error import YAMLError

    try:
        parsed = YAML(typ="safe", pure=True).load(text) if text else None
    except YAMLError:
        return False
    return bool(parsed == text)
