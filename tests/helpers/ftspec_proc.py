"""Run the installed ``ftspec`` console script as a user would, in a working folder: what
the e2e tests drive. A traceback on stderr is always a failure (errors are one located
line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def ftspec(workdir: Path, env: dict[str, str], *args: str, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a command printed, once it exited 0."""
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)
