"""ftspec's version: read from the git tag by setuptools-scm, printed by `ftspec version`,
and named the same by the changelog, the pre-commit snippets and the newest tag.

The version lives in one place, the tag; CHANGELOG.md's newest release and the snippets'
``rev:`` must agree with it (docs/reference/releases.md). A clone without tags (the
landing may carry none) or without git metadata is a case of its own, asserted rather
than skipped: what setuptools-scm gives there is known.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import setuptools_scm
from helpers.cli_run import run
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # setuptools-scm depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"
SNIPPET_PAGES = (ROOT / "docs" / "reference" / "project-setup.md", ROOT / "spec" / "README.md")
"""The pages whose pre-commit snippet names a release (``rev: vX.Y.Z``)."""
RELEASE = re.compile(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$", re.MULTILINE)
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)
REV = re.compile(r"^\s*rev:\s*(\S+)", re.MULTILINE)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "ftspec-test", "GIT_AUTHOR_EMAIL": "test@ftspec.invalid",
    "GIT_COMMITTER_NAME": "ftspec-test", "GIT_COMMITTER_EMAIL": "test@ftspec.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def newest_release(changelog: str) -> str:
    """The version of the first ``## X.Y.Z - DATE`` heading; ``## Unreleased`` must come
    before it (the changelog is newest first)."""
    found = RELEASE.search(changelog)
    assert found is not None, "CHANGELOG.md has no '## X.Y.Z - YYYY-MM-DD' release heading"
    assert "\n## Unreleased\n" in changelog[:found.start()], \
        "CHANGELOG.md needs a '## Unreleased' section above the newest release"
    return found.group(1)


def snippet_revs(page: str) -> list[str]:
    """The ``rev:`` of each YAML block that uses the ftspec-validate hook."""
    return [rev for block in FENCE.findall(page) if "id: ftspec-validate" in block
            for rev in REV.findall(block)]


def scm_config() -> dict[str, Any]:
    """Our ``[tool.setuptools_scm]`` table, as keyword arguments of ``get_version``, less
    its ``version_file``: these tests read the version a build gives; only the install
    writes the file (``tests/unit/test_version_read.py``), never a test into this tree."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        table: dict[str, Any] = tomllib.load(f)["tool"]["setuptools_scm"]
    assert table.pop("version_file") == "reconciler/_version.py"
    return table


def scm_version(root: Path) -> str:
    """The version setuptools-scm gives ``root`` under our config, as a build would."""
    return setuptools_scm.get_version(root=str(root), **scm_config())


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], check=False, cwd=cwd, env=dict(os.environ, **GIT_ENV),
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(autouse=True)
def _no_pretend(monkeypatch: pytest.MonkeyPatch) -> None:
    """setuptools-scm obeys SETUPTOOLS_SCM_PRETEND_VERSION and the like; none may leak in."""
    for name in list(os.environ):
        if name.startswith(("SETUPTOOLS_SCM_", "VCS_VERSIONING_")):
            monkeypatch.delenv(name)


def test_ftspec_version_prints_the_installed_version(
        capsys: pytest.CaptureFixture[str]) -> None:
    installed = version("ftspec")
    Version(installed)  # a PEP 440 version (raises otherwise)
    code, out, _ = run(capsys, "version", "--json")
    assert code == 0
    assert json.loads(out)["ftspec"] == installed
    assert run(capsys, "--version") == (0, f"ftspec {installed}\n", "")


def test_changelog_and_pre_commit_snippets_name_the_same_release() -> None:
    newest = newest_release(CHANGELOG.read_text(encoding="utf-8"))
    for page in SNIPPET_PAGES:
        revs = snippet_revs(page.read_text(encoding="utf-8"))
        assert revs, f"{page.relative_to(ROOT)}: no pre-commit snippet with ftspec-validate"
        assert set(revs) == {f"v{newest}"}, (
            f"{page.relative_to(ROOT)} names rev {revs}, CHANGELOG.md's newest release is "
            f"{newest}: change both together (docs/reference/releases.md)")


def test_the_parsers_see_a_disagreement() -> None:
    changelog = ("# Changelog\n\n## Unreleased\n\n## 0.2.0 - 2027-01-02\n\n- more\n\n"
                 "## 0.1.0 - 2026-11-28\n\n- first\n")
    page = ("```yaml\nrepos:\n  - repo: https://example.invalid/ftspec\n    rev: v0.1.0\n"
            "    hooks:\n      - id: ftspec-validate\n```\n\n"
            "```yaml\nrepos:\n  - repo: https://example.invalid/other\n    rev: v7\n"
            "    hooks:\n      - id: other-hook\n```\n")
    assert newest_release(changelog) == "0.2.0"
    assert snippet_revs(page) == ["v0.1.0"]
    with pytest.raises(AssertionError, match="Unreleased"):
        newest_release(changelog.replace("## Unreleased\n", ""))


def test_this_checkout_reports_the_version_of_its_tag() -> None:
    """With a ``v*`` tag reachable from HEAD, it is the changelog's newest release and
    setuptools-scm gives that version (or, past it or with local edits, a dev version
    above it); with no tag, a dev version below every release; with no git, the fallback."""
    newest = Version(newest_release(CHANGELOG.read_text(encoding="utf-8")))
    got = Version(scm_version(ROOT))
    if git(ROOT, "rev-parse", "--git-dir").returncode != 0:
        assert got == Version(str(scm_config()["fallback_version"]))
        return
    described = git(ROOT, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*")
    if described.returncode == 0:
        tag = described.stdout.strip()
        assert tag == f"v{newest}", f"the newest tag {tag} is not CHANGELOG.md's {newest}"
        assert got == newest or (got.is_devrelease and got > newest), got
    else:
        assert got.is_devrelease and got < newest, got


def test_a_tag_is_the_version_with_our_config(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """In a throw-away repository holding our pyproject.toml: the tag v9.9.9 gives 9.9.9, a
    commit after it 9.9.10.dev1, no tag 0.1.dev1, and no git at all the fallback."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no repository above
    bare = tmp_path / "copy"
    bare.mkdir()
    shutil.copy(ROOT / "pyproject.toml", bare / "pyproject.toml")
    assert scm_version(bare) == "0.0"

    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    for args in (("init", "-q", "-b", "main"), ("add", "pyproject.toml"),
                 ("commit", "-q", "-m", "first")):
        assert git(repo, *args).returncode == 0
    assert scm_version(repo).startswith("0.1.dev1+g")

    assert git(repo, "tag", "-a", "v9.9.9", "-m", "ftspec 9.9.9").returncode == 0
    assert scm_version(repo) == "9.9.9"

    (repo / "CHANGELOG.md").write_text("# Changelog\n", encoding="utf-8")
    assert git(repo, "add", "CHANGELOG.md").returncode == 0
    assert git(repo, "commit", "-q", "-m", "second").returncode == 0
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    after = re.fullmatch(r"9\.9\.10\.dev1\+g([0-9a-f]{7,40})", scm_version(repo))
    assert after is not None and head.startswith(after.group(1)), (after, head)
