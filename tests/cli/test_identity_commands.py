"""destroy, status and logs need only the job's identity: they run where no launcher package
(torchtune, accelerate) can be imported, and compile nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("torchtune", "recipes", "accelerate", "torch", "transformers", "trl", "peft")
PROBE = """
import contextlib, io, json, sys
BLOCKED = set(json.loads(sys.argv[1]))

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Block())
from ftspec.cli.main import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[2:])
print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()}))
"""


def _run(cwd: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(BLOCKED), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_identity_commands_work_without_launcher_packages(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "tiny-local.yaml", tmp_path / "examples")
    spec = "examples/tiny-local.yaml"
    status = _run(tmp_path, "status", spec, "--json")
    assert status["code"] == 0, status
    [row] = json.loads(str(status["out"]))
    assert (row["address"], row["phase"]) == ("local.run.tiny-local", "Unknown")
    destroy = _run(tmp_path, "destroy", spec, "--auto-approve")
    assert destroy["code"] == 0, destroy
    assert "No changes." in str(destroy["out"]), destroy
    logs = _run(tmp_path, "logs", spec)
    assert logs["code"] == 1
    assert "no local run recorded" in str(logs["err"]), logs


def test_the_block_is_real(tmp_path: Path) -> None:
    """The same probe makes a command that needs the launcher fail: the block can bite."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "tiny-local.yaml", tmp_path / "examples")
    compiled = _run(tmp_path, "compile", "examples/tiny-local.yaml")
    assert compiled["code"] != 0
    err = str(compiled["err"])
    assert any(word in err for word in ("ModuleNotFoundError", "blocked", "not installed")), err


def test_validate_runs_the_launcher_checks_without_the_launcher_package() -> None:
    """validate's answer does not depend on this machine: torchtune's checks read the
    committed snapshot of its configs, never the package (blocked here)."""
    spec = str(ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml")
    ok = _run(ROOT, "validate", spec)
    assert ok["code"] == 0, ok
    bad = _run(ROOT, "validate", spec, "--set", "model.dtype=fp16")
    assert bad["code"] == 1
    assert "--set[0]:1:13: error: model.dtype: torchtune's recipes do not train in fp16" \
        in str(bad["out"]), bad
