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

import importlib.util
import io
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ftspec.spec.jsondata import copy_json
from ruamel.yaml import YAML
from ruamel.yaml.representer import SafeRepresenter


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


@lru_cache(maxsize=64)
def _parsed(path: Path, mtime_ns: int, size: int) -> Any:
    """One parse per file version and process (a plan over 50 specs reads one config):
    through the spec loader (YAML 1.2 as ruamel reads it, its libyaml fast path; the
    shipped configs read the same both ways: ``test_torchtune_config_reads``), or ruamel
    itself for a file the spec loader refuses (a duplicate key, a timestamp)."""
    from ftspec.spec.diagnostics import SpecError
    from ftspec.spec.loader import parse_yaml

    text = path.read_text(encoding="utf-8")
    if "!!timestamp" not in text and not _DATE.search(text):
        try:
            return parse_yaml(text, str(path)).data
        except SpecError:
            pass
    return YAML(typ="safe", pure=True).load(text)


_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
"""Text ruamel would read as a timestamp, which the spec loader keeps as a string."""


def load_config(name: str) -> dict[str, Any]:
    """A fresh, plain-dict copy of a shipped config."""
    path = configs_dir() / f"{name}.yaml"
    stat = path.stat()
    data = _parsed(path, stat.st_mtime_ns, stat.st_size)
    if not isinstance(data, dict):
        raise TypeError(f"torchtune config {name} is not a mapping")
    return copy_json(data)


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
    out = copy_json(base)
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
            node[last] = copy_json(op.value)
    return out


class _OmegaConfRepresenter(SafeRepresenter):
    """Quotes every string OmegaConf's loader (YAML 1.1 booleans, sexagesimals…) would not
    read back as itself: torchtune loads the config file with ``OmegaConf.load``."""

    def represent_str(self, data: str) -> Any:
        style = None
        if any(ord(c) < 0x20 or c == "\x7f" for c in data):
            style = '"'
        elif not _reads_back_as(data):
            style = "'"
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_OmegaConfRepresenter.add_representer(str, _OmegaConfRepresenter.represent_str)


def dump_yaml(data: dict[str, Any]) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _OmegaConfRepresenter
    yaml.default_flow_style = False
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def format_value(value: Any, flow: bool = False) -> str:
    """A value as torchtune's command line parses it: ``tune run`` splits each override at
    ``=`` (torchtune.config._utils._merge_yaml_and_cli_args), maps ``None`` to null, then
    hands ``key=value`` to ``OmegaConf.from_dotlist``, which reads the value as YAML. A
    string that would not come back as itself is quoted: single quotes, or double quotes
    with escapes where it holds control characters (single quotes fold line breaks).
    ``flow``: inside a ``[…]`` / ``{…}`` collection, where ``,[]{}`` end a plain scalar.
    Strings no quoting can carry (``=``, OmegaConf's ``???``) are refused by
    ``cli_problem`` before compile."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k, True)}: {format_value(v, True)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v, True) for v in value) + "]"
    text = str(value)
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return json.dumps(text, ensure_ascii=False)
    if (flow and any(c in text for c in ",[]{}")) or not _reads_back_as(text):
        return "'" + text.replace("'", "''") + "'"
    return text


OMEGACONF_MISSING = "???"


def cli_problem(value: Any) -> str | None:
    """Why ``value`` cannot pass torchtune's ``key=value`` command line, or None."""
    if isinstance(value, dict):
        return next((p for k, v in value.items()
                     for p in (cli_problem(k), cli_problem(v)) if p), None)
    if isinstance(value, (list, tuple)):
        return next((p for v in value if (p := cli_problem(v))), None)
    if not isinstance(value, str):
        return None
    if "=" in value:
        return ("torchtune splits each command-line override at '=', so a value cannot "
                "contain one")
    if value == OMEGACONF_MISSING:
        return "OmegaConf reads ??? as a missing value"
    return None


@lru_cache(maxsize=1024)
def _reads_back_as(text: str) -> bool:
    """Does ``text``, unquoted, come back from torchtune's command line as the same string?

    Decided by OmegaConf itself when it is installed (it is whenever torchtune is); else by
    YAML 1.2 plus the YAML 1.1 words OmegaConf's loader still reads as booleans."""
    if text in ("", "None") or text.strip() != text:
        return False
    if _PLAIN_NAME.fullmatch(text) and text.lower() not in YAML11_WORDS:
        return True  # a name or path: no resolver, interpolation or escape applies to it
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return _yaml_reads_back_as(text)
    try:
        conf = OmegaConf.from_dotlist([f"v={text}"])
        got = OmegaConf.to_container(conf, resolve=False)
    except Exception:  # noqa: BLE001 - any parse failure means: quote it
        return False
    return isinstance(got, dict) and got.get("v") == text


YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})

_PLAIN_NAME = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*")
"""Text that reads back as itself without asking OmegaConf (whose import and parser cost
more than a plan's other work on one spec): it starts with a letter, ``_`` or ``/``, so
no YAML 1.1 number, timestamp, merge or tag resolver matches it, it holds no ``$`` or
``\\`` for OmegaConf's grammar, and the YAML 1.1 words are excluded.
``test_torchtune_cli_values`` checks the rule against OmegaConf."""


def literal(text: str) -> str:
    """Spec text as an OmegaConf string that stays itself: ``${`` escaped (OmegaConf would
    interpolate it, in the config file and on the command line alike)."""
    return text.replace("${", "\\${")


def _yaml_reads_back_as(text: str) -> bool:
    from ruamel.yaml.error import YAMLError

    if text.lower() in YAML11_WORDS:
        return False
    try:
        parsed = YAML(typ="safe", pure=True).load(text)
    except YAMLError:
        return False
    return bool(parsed == text)
