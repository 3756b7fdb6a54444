"""The target and launcher registries are typed so that mypy --strict rejects an incomplete
plugin: each module's ``TARGET`` is annotated ``Target`` (a launcher's: ``Launcher``), and
the protocols are checked structurally at that assignment.

Each test runs mypy on a probe module twice: as written (it must pass, so the failure below
is the missing method and nothing else) and with one method removed (it must fail, naming
that method). The package is laid out as the wheel does (symlinks under ``ftspec/``), as in
``tests/test_types.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("spec", "compiler", "targets", "reconciler", "cli", "schemas")

pytestmark = pytest.mark.slow


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    pkg = tmp_path / "ftspec"
    if not pkg.exists():
        pkg.mkdir()
        for name in PACKAGES:
            (pkg / name).symlink_to(ROOT / name, target_is_directory=True)
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    cache = Path.home() / ".cache" / "ftspec" / "mypy-registry"
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--namespace-packages",
         "--explicit-package-bases", "--ignore-missing-imports", "--follow-imports=silent",
         "--cache-dir", str(cache), "probe.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=900)


def _without_method(source: str, cls: str, method: str) -> str:
    """``source`` with ``cls.method`` (its def and body) removed."""
    body = source.split(f"class {cls}:", 1)[1]
    found = re.search(rf"\n    def {method}\(.*?(?=\n    def |\n\n\n)", body, re.DOTALL)
    assert found is not None, f"{cls}.{method} not found"
    return source.replace(found.group(0), "", 1)


def test_deleting_kuberay_check_fails_mypy(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the [dev] extra")
    source = (ROOT / "targets" / "kuberay.py").read_text(encoding="utf-8")
    whole = _mypy(tmp_path, source)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    broken = _mypy(tmp_path, _without_method(source, "KubeRayTarget", "check"))
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert 'Incompatible types in assignment (expression has type "KubeRayTarget", ' \
        'variable has type "Target")' in broken.stdout, broken.stdout
    assert re.search(r"note:\s+check$", broken.stdout, re.MULTILINE), broken.stdout


LAUNCHER = '''
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LAUNCHER_FACTS
from ftspec.targets.base import Artifact, Launch
from ftspec.targets.gap import Gap
from ftspec.targets.launcher import KubeflowStyle, Launcher
from ftspec.targets.paths import RunPaths


class Echo:
    """A launcher that runs ``echo``: every method of the protocol."""

    name = "echo"
    facts = LAUNCHER_FACTS["accelerate"]
    kubeflow_style: KubeflowStyle = "command"

    def check(self, job: Job) -> list[Diagnostic]:
        return []

    def compile(self, job: Job) -> list[Artifact]:
        return []

    def launch(self, job: Job, paths: RunPaths | None = None) -> Launch:
        return Launch(argv=("echo", job.name))

    def trainer_args(self, job: Job, paths: RunPaths | None = None) -> Mapping[str, Any]:
        return {}

    def rank_flags(self, job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
        return {"--rank": rank}

    def download_step(self, job: Job) -> list[str]:
        return []

    def probe(self, job: Job) -> list[Diagnostic]:
        return []

    def gaps(self) -> tuple[Gap, ...]:
        return ()


TARGET: Launcher = Echo()
'''


@pytest.mark.parametrize("method", ["rank_flags", "download_step", "gaps", "launch"])
def test_a_launcher_missing_a_method_fails_mypy(tmp_path: Path, method: str) -> None:
    pytest.importorskip("mypy", reason="mypy is in the [dev] extra")
    whole = _mypy(tmp_path, LAUNCHER)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    broken = _mypy(tmp_path, _without_method(LAUNCHER, "Echo", method))
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert 'expression has type "Echo", variable has type "Launcher"' in broken.stdout, \
        broken.stdout
    assert re.search(rf"note:\s+{method}$", broken.stdout, re.MULTILINE), broken.stdout


def test_every_target_module_annotates_its_target() -> None:
    """The annotation is what makes mypy check the protocol: every module has it."""
    from ftspec.spec.platforms import COMPILE_TARGETS, LAUNCHERS

    for name in COMPILE_TARGETS:
        text = (ROOT / "targets" / f"{name}.py").read_text(encoding="utf-8")
        kind = "Launcher" if name in LAUNCHERS else "Target"
        assert re.search(rf"^TARGET: {kind} = \w+\(\)$", text, re.MULTILINE), name
