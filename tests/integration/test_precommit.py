"""The `ftspec-validate` hook under the real pre-commit, in a throw-away git repository.

pre-commit installs the hook by cloning a git repository at a rev and pip-installing it.
The test snapshots the working tree into a git repository with a deterministic commit,
so the same content gives the same rev; the repository and PRE_COMMIT_HOME live under
``~/.cache/ftspec/pre-commit/<content hash>`` so a rerun reuses the installed hook
environment. The first run pip-installs the light core dependencies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

# pre-commit builds the hook environment and runs the hook: processes for seconds; the second
# test reads the environment the first one built
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOOK_INPUTS = ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md", "spec", "cli",
               "compiler", "targets", "runtime", "reconciler", "schemas")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "ftspec-test", "GIT_AUTHOR_EMAIL": "test@ftspec.invalid",
    "GIT_COMMITTER_NAME": "ftspec-test", "GIT_COMMITTER_EMAIL": "test@ftspec.invalid",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def _hook_files() -> list[Path]:
    out: list[Path] = []
    for name in HOOK_INPUTS:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file()
                          and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return out


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, **GIT_ENV)
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True, timeout=60)
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def hook_repo() -> tuple[Path, str, Path]:
    """(repository, rev, PRE_COMMIT_HOME) for the hook, cached by content."""
    files = _hook_files()
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    cache = Path.home() / ".cache" / "ftspec" / "pre-commit" / digest.hexdigest()[:16]
    repo = cache / "hook-repo"
    if not (repo / ".git").is_dir():
        shutil.rmtree(repo, ignore_errors=True)
        for path in files:
            dest = repo / path.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "ftspec hook snapshot")
    return repo, _git(repo, "rev-parse", "HEAD"), cache / "home"


GOOD = (ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml").read_text(encoding="utf-8")
BAD = GOOD.replace("launcher: torchtune", "launcher: torchtun")


def _user_repo(tmp_path: Path, hook: tuple[Path, str, Path]) -> dict[str, str]:
    repo, rev, home = hook
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: ftspec-validate\n"
    )
    _git(tmp_path, "add", ".pre-commit-config.yaml")
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), NO_COLOR="1", **GIT_ENV)
    env.pop("FORCE_COLOR", None)
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    subprocess.run([pre_commit, "install"], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=60)
    return env


def _commit(tmp_path: Path, env: dict[str, str], name: str, text: str
            ) -> subprocess.CompletedProcess[str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", name], cwd=tmp_path, env=env, check=True, timeout=60)
    return subprocess.run(["git", "commit", "-m", f"add {name}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def test_hook_blocks_bad_specs_and_passes_good_ones_and_other_yaml(
        tmp_path: Path, hook_repo: tuple[Path, str, Path]) -> None:
    env = _user_repo(tmp_path, hook_repo)
    start = time.perf_counter()
    bad = _commit(tmp_path, env, "train.yaml", BAD)
    first = time.perf_counter() - start
    print(f"\nfirst hook run (includes installing the hook environment if not cached): "
          f"{first:.1f}s")
    output = bad.stdout + bad.stderr
    assert bad.returncode != 0, output
    assert "ftspec validate" in output and "Failed" in output
    assert 'train.yaml:61:11: error: launcher: invalid value: a string "torchtun"' in output
    assert 'hint: did you mean "torchtune"?' in output

    good = _commit(tmp_path, env, "train.yaml", GOOD)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "ftspec validate" in good.stderr and "Passed" in good.stderr

    other = _commit(tmp_path, env, "ci.yaml", "on: push\njobs:\n  test: {runs-on: x}\n")
    assert other.returncode == 0, other.stdout + other.stderr
    assert "ftspec validate" in other.stderr and "Passed" in other.stderr

    log = _git(tmp_path, "log", "--format=%s")
    assert log.splitlines() == ["add ci.yaml", "add train.yaml"]


def test_hook_environment_is_light(hook_repo: tuple[Path, str, Path]) -> None:
    """Runs after the hook test installed the environment: no torch (or other heavy) in it."""
    _, _, home = hook_repo
    site = list(home.glob("repo*/py_env-*/lib/python*/site-packages"))
    assert site, f"no hook environment under {home}"
    installed = {p.name.split("-")[0].lower() for p in site[0].iterdir()}
    assert {"pydantic", "jsonschema", "click"} <= installed
    assert not installed & {"torch", "ray", "kubernetes", "deepdiff", "accelerate"}
