"""Compile a spec for every target and run what it generates under a shell with fake
launchers, to prove that no spec value runs as code.

The fake ``tune``, ``accelerate``, ``python`` … record their arguments and exit 0; the
payloads try to ``touch`` canary files in ``CANARY_DIR``. A canary that exists after a run
means data was executed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAKE_PROGRAMS = ("tune", "accelerate", "python", "python3", "torchrun", "trl", "hf",
                 "huggingface-cli", "pip")
FAKE = '#!/bin/sh\nprintf "%s\\0" "$(basename "$0")" "$@" >> "$ARGV_LOG"\nprintf "\\n" >> "$ARGV_LOG"\n'


def payloads(canary_dir: Path) -> list[str]:
    """Strings that run ``touch`` if a script lets them be code, one way each."""
    c = str(canary_dir)
    return [
        f"x\ntouch {c}/newline\n",
        f"$(touch {c}/subst)",
        f"`touch {c}/backquote`",
        f"';touch {c}/single;'",
        f'";touch {c}/double;"',
        f"${{x:=$(touch {c}/param)}}",
        f'"$(dirname "$0")/$(touch {c}/dirname)',
        f"a\r\ntouch {c}/crlf\n#",
        f"\\\ntouch {c}/continuation",
    ]


def combined(canary_dir: Path) -> str:
    return "".join(payloads(canary_dir))


def fake_bin(root: Path) -> Path:
    bin_dir = root / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for name in FAKE_PROGRAMS:
        prog = bin_dir / name
        prog.write_text(FAKE)
        prog.chmod(0o755)
    return bin_dir


@dataclass(frozen=True)
class Run:
    what: str
    returncode: int
    output: str
    calls: list[list[str]]


def run_shell(root: Path, what: str, argv: list[str], cwd: Path) -> Run:
    log = root / "argv.log"
    log.unlink(missing_ok=True)
    env = {"PATH": f"{fake_bin(root)}:/usr/bin:/bin", "ARGV_LOG": str(log), "HOME": str(root),
           "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "LC_ALL": "C.UTF-8"}
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=30, check=False)
    calls: list[list[str]] = []
    if log.exists():
        for line in log.read_bytes().split(b"\0\n"):
            if line:
                calls.append([p.decode("utf-8", "surrogateescape") for p in line.split(b"\0")])
    return Run(what, proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace"), calls)


def shell_entrypoints(obj: Any) -> Iterator[str]:
    """Every ``entrypoint`` string in a manifest or submission (Ray runs them with a shell)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "entrypoint" and isinstance(value, str):
                yield value
            else:
                yield from shell_entrypoints(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from shell_entrypoints(item)


def run_artifacts(root: Path, target: str, artifacts: list[Any]) -> list[Run]:
    """Write the artifacts to a folder, run every script and shell entrypoint in it."""
    out = root / "out" / target
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for art in artifacts:
        dest = out / art.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(art.content, encoding="utf-8")
    for art in artifacts:
        if art.path.endswith(".sh"):
            runs.append(run_shell(root, f"{target}/{art.path}", ["sh", str(out / art.path)],
                                  root))
        if art.obj is not None:
            for i, entry in enumerate(shell_entrypoints(art.obj)):
                runs.append(run_shell(root, f"{target}/{art.path}#entrypoint{i}",
                                      ["sh", "-c", entry], root))
    return runs


def canaries(canary_dir: Path) -> list[str]:
    return sorted(os.listdir(canary_dir))
