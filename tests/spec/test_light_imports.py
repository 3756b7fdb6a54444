"""`ftspec validate` runs on every commit (pre-commit): it must not import heavy packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes", "deepdiff", "ray", "torch", "accelerate", "transformers", "torchtune",
         "celpy", "lark")
PROBE = """
import contextlib, io, json, sys
from ftspec.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["validate", *sys.argv[1:]])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(HEAVY)))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def test_validate_imports_nothing_heavy() -> None:
    examples = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.replace("HEAVY", repr(json.dumps(HEAVY))), *examples],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result == {"code": 0, "heavy": []}


def test_probe_would_notice_a_heavy_import() -> None:
    """The check above can fail: importing one heavy package shows up in sys.modules."""
    probe = "import json, sys; import deepdiff; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'deepdiff')[:1]))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["deepdiff"]
