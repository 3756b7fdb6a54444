"""The environment a test runs compiled accelerate commands in: `accelerate` from this
interpreter (so its workers import the ftspec under test) and no network."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def accelerate_env(tmp: Path, **extra: str) -> dict[str, str]:
    shim = tmp / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "accelerate").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m accelerate.commands.accelerate_cli "$@"\n')
    (shim / "accelerate").chmod(0o755)
    return {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "HF_HOME": str(tmp / "hf_home"), **extra}
