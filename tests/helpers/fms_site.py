"""fms-hf-tuning 3.2.2 and the stack its pins allow, as one folder a child process puts first
on its path (over ftspec's environment): its pins (transformers<=4.55.4, trl<0.20,
datasets<5) clash with ftspec's transformers 5 / TRL 1, so it cannot be installed beside them.

Every wheel is fetched with ``pip download --no-deps`` (no resolver run against ftspec's
environment) and unpacked into ``~/.cache/ftspec/fms-hf-tuning-<version>-site``; the rest
(torch, accelerate, tokenizers' Rust core's own deps...) comes from ftspec's environment.
A test that needs it skips, saying why, where the wheels cannot be downloaded.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

VERSION = "3.2.2"
PARSER = (f"fms-hf-tuning=={VERSION}", "transformers==4.55.4", "tokenizers>=0.21,<0.22",
          "huggingface_hub>=0.34,<1.0")
"""Enough to build its argument parser."""
TRAINING = (*PARSER, "trl>=0.19.1,<0.20", "peft>=0.19.1,<0.20", "datasets>=4.0.0,<5.0.0",
            "simpleeval>=0.9.13,<2.0", "httpx<1", "httpcore<2")
"""Enough to run ``tuning.sft_trainer`` (datasets 4 wants httpx, absent from ftspec's)."""


def site(wanted: tuple[str, ...] = PARSER) -> Path:
    """The folder with ``wanted`` unpacked (downloaded once)."""
    name = "training" if wanted == TRAINING else "parser"
    dest = Path.home() / ".cache" / "ftspec" / f"fms-hf-tuning-{VERSION}-{name}"
    done_mark = dest / ".complete"
    if done_mark.is_file():
        return dest
    download = dest.with_name(dest.name + ".download")
    done = subprocess.run([sys.executable, "-m", "pip", "download", *wanted, "--no-deps",
                           "-q", "-d", str(download)],
                          capture_output=True, text=True, check=False, timeout=900)
    wheels = sorted(download.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != len(wanted):
        pytest.skip(f"fms-hf-tuning {VERSION} and its pins cannot be downloaded here: "
                    f"{done.stderr[-300:]}")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as whl:
            whl.extractall(dest)
    done_mark.write_text("\n".join(w.name for w in wheels) + "\n", encoding="utf-8")
    return dest
