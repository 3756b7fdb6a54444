"""What the torchtune checks need from torchtune, read as data: its shipped recipe configs.

``torchtune_shipped.json`` (committed beside this module) lists every config torchtune
ships (``recipes/configs/<folder>/<name>.yaml``) with its top-level keys. ``ftspec validate``
and the target checks read this file, never the installed package: validation gives the
same answer on a machine without torchtune (the pre-commit hook installs none), and no
check depends on what happens to be installed. Compiling still reads the installed configs
(``torchtune_configs``) to resolve them; whether torchtune is installed is an environment
probe (``probe``) that only the artifacts stage runs.

Regenerate after a torchtune upgrade: ``python -m ftspec.targets.torchtune_snapshot``.
``tests/targets/test_torchtune_snapshot.py`` fails when the committed file and the
installed torchtune disagree (like the JSON Schema drift test).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job

SNAPSHOT = Path(__file__).with_name("torchtune_shipped.json")


@lru_cache(maxsize=1)
def snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return data


def shipped(name: str) -> bool:
    """``llama3_2/1B_lora`` -> does torchtune ship ``recipes/configs/llama3_2/1B_lora.yaml``?"""
    return name in snapshot()["configs"]


def build_snapshot() -> dict[str, Any]:
    """The snapshot of the installed torchtune (reads its YAML; imports nothing of it)."""
    import importlib.metadata

    from ftspec.targets.torchtune_configs import configs_dir, load_config

    root = configs_dir()
    configs: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.yaml")):
        name = path.relative_to(root).with_suffix("").as_posix()
        data = load_config(name)
        configs[name] = sorted(str(k) for k in data) if isinstance(data, dict) else []
    return {"torchtune": importlib.metadata.version("torchtune"), "configs": configs}


def dump(data: dict[str, Any]) -> str:
    """One config per line, sorted: diffs after an upgrade read config by config."""
    rows = [f"  {json.dumps(name)}: {json.dumps(keys)}"
            for name, keys in sorted(data["configs"].items())]
    return (f'{{"torchtune": {json.dumps(data["torchtune"])}, "configs": {{\n'
            + ",\n".join(rows) + "\n}}\n")


_probe = Findings("env.torchtune").error


def probe(job: Job) -> list[Diagnostic]:
    """Environment: compiling a torchtune run reads the installed torchtune's configs."""
    from ftspec.targets.torchtune_configs import torchtune_installed

    if not torchtune_installed():
        return [_probe(("launcher",), "torchtune is not installed, so its recipe configs "
                       "cannot be read", "not-installed", hint="pip install 'ftspec[torchtune]'")]
    return []


if __name__ == "__main__":
    SNAPSHOT.write_text(dump(build_snapshot()), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
