"""``python -m ftspec.reconciler.local.tokens``: the real token count of a torchtune run's
training data, through torchtune's own config loader.

The config is read from standard input, and it is the one ftspec compiles from the spec now
(``measure_run.py`` passes the launcher's compiled artifact), never a file from the run's
folder: a file under ``.ftspec/`` can be planted or committed by anyone, and instantiating
the components it names would run whatever it names (``_component_: os.system``). The
tokenizer and dataset sections are instantiated exactly as the recipe does
(``torchtune.config.instantiate``), after every ``_component_`` in them is checked to be one
of torchtune's tokenizer builders (``torchtune.models.``) or datasets
(``torchtune.datasets.``). So each row is tokenized with the run's prompt template, special
tokens and truncation to ``tokenizer.max_seq_len``; the tokens of every row are summed. No
padding is counted: padding is added by the collator, after this. Prints one JSON object:
``{"rows": N, "tokens": T}``. Run in a child process (torchtune and torch are imported only
there).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

ALLOWED = {"tokenizer": ("torchtune.models.",), "dataset": ("torchtune.datasets.",)}
"""The components each section may name: what the torchtune target compiles to."""


class RefusedComponent(ValueError):
    pass


def components(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every ``(key path, _component_)`` in a config section."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "_component_":
                yield path, str(item)
            else:
                yield from components(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from components(item, f"{path}[{i}]")


def check_components(config: dict[str, Any], resolve: bool = True) -> None:
    """Refuse any component but torchtune's own of each section: named under the section's
    prefix by public names only, and (``resolve``) defined in a torchtune module, so a path
    through a module's imports (``torchtune.models.x.os.system``) is refused too."""
    for section, prefixes in ALLOWED.items():
        if not isinstance(config.get(section), dict):
            raise RefusedComponent(f"the config has no {section} section")
        for where, name in components(config[section], section):
            parts = name.split(".")
            if not name.startswith(prefixes) or \
                    any(not p.isidentifier() or p.startswith("_") for p in parts):
                raise RefusedComponent(
                    f"{where}._component_ {name!r} is not one of torchtune's "
                    f"{section} components ({', '.join(prefixes)}); not instantiated")
            if resolve and not _defined_in_torchtune(parts):
                raise RefusedComponent(f"{where}._component_ {name!r} is not defined in "
                                       "torchtune; not instantiated")


def _defined_in_torchtune(parts: list[str]) -> bool:
    import functools
    import importlib

    for split in range(len(parts), 1, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part, None)
        while isinstance(obj, functools.partial):  # alpaca_cleaned_dataset and the like
            obj = obj.func
        module = getattr(obj, "__module__", None)
        return callable(obj) and isinstance(module, str) and module.startswith("torchtune.")
    return False


def count(config_text: str) -> dict[str, int]:
    import yaml
    from omegaconf import OmegaConf

    loaded = yaml.safe_load(config_text)
    if not isinstance(loaded, dict):
        raise RefusedComponent("the config is not a mapping")
    check_components(loaded)
    from torchtune import config

    cfg = OmegaConf.create(loaded)
    tokenizer = config.instantiate(cfg.tokenizer)
    dataset = config.instantiate(cfg.dataset, tokenizer)
    rows = len(dataset)
    tokens = sum(len(dataset[i]["tokens"]) for i in range(rows))
    return {"rows": rows, "tokens": tokens}


def main(args: list[str]) -> int:
    if args:
        sys.stderr.write("usage: python -m ftspec.reconciler.local.tokens < CONFIG\n")
        return 2
    try:
        counted = count(sys.stdin.read())
    except RefusedComponent as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stdout.write(json.dumps(counted) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
