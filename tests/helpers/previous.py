"""The previous release of ftspec, installed in a virtualenv of its own (at another path).

``PREVIOUS`` is the last commit on main before plans stopped depending on ftspec's own
defaults (spec hash in headers, Ray ids and annotations). Its source comes out of this
repository's history (``git archive``), is installed with ``pip install --no-deps`` (build requirements from the package index,
as any install) into a
virtualenv whose site-packages also sees this environment's packages (a ``.pth`` listing
them: torch, torchtune, ray… are not installed twice), the way the worktrees' virtualenvs
overlay the main one. The result is cached under ``$FTSPEC_CACHE_DIR/previous/<commit>``
(default ``~/.cache/ftspec``) and shared by every test and session; it is rebuilt only when
missing or broken. The ``.pth`` is written anew for the environment that uses the cache (the
one that built it may be gone: a deleted clone's virtualenv), and a cached virtualenv counts
only if its command line's imports load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PREVIOUS = "6274f4f952d552bba32625b977fb6c0c7a02ee56"
"""main before issue 21 (identity across upgrades)."""


class PreviousUnavailable(Exception):
    pass


def _cache_root() -> Path:
    base = os.environ.get("FTSPEC_CACHE_DIR") or str(Path.home() / ".cache" / "ftspec")
    return Path(base) / "previous"


def _run(*cmd: str, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PreviousUnavailable(f"{' '.join(cmd[:4])}…: {done.stderr.strip()[-600:]}")
    return done.stdout


def _commit(revision: str) -> str:
    try:
        return _run("git", "rev-parse", "--verify", f"{revision}^{{commit}}", cwd=REPO).strip()
    except PreviousUnavailable as exc:
        raise PreviousUnavailable(f"commit {revision[:12]} is not in this clone's history "
                                  f"(a shallow clone?): {exc}") from None


def _site_dirs() -> list[str]:
    """This environment's package folders, ftspec's own source excluded."""
    own = {str(REPO), str(REPO.parent)}
    return [p for p in sys.path if p and Path(p).is_dir() and p not in own
            and ("site-packages" in p or "dist-packages" in p)]


def _works(python: Path, venv: Path) -> bool:
    """The virtualenv imports its own ftspec (not this checkout's) and its command line's
    dependencies (click, rich, … from the overlaid environment)."""
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", ("import ftspec.cli.main, ftspec.spec as s; "
                           "print(s.__path__[0])")],
                          capture_output=True, text=True, check=False, cwd="/")
    return done.returncode == 0 and done.stdout.startswith(str(venv))


def _overlay(python: Path) -> None:
    """Point the virtualenv's ``.pth`` at this environment's package folders."""
    purelib = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    pth = purelib / "zz_current_env.pth"
    text = "\n".join(_site_dirs()) + "\n"
    if not pth.exists() or pth.read_text() != text:
        pth.write_text(text)


def previous_ftspec(revision: str = PREVIOUS) -> Path:
    """The ``ftspec`` command of the previous release (built once, then cached); another
    ``revision`` of main for measurements by hand."""
    commit = _commit(revision)
    root = _cache_root() / commit[:12]
    venv, src = root / "venv", root / "src"
    python, command = venv / "bin" / "python", venv / "bin" / "ftspec"
    if python.exists():
        _overlay(python)
    if _works(python, venv) and command.exists():
        return command
    shutil.rmtree(root, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO,
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise PreviousUnavailable(archive.stderr.decode(errors="replace")[-600:])
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    _overlay(python)
    pip_env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                           str(src)],
                          capture_output=True, text=True, env=pip_env, check=False)
    if done.returncode != 0 or not _works(python, venv):
        raise PreviousUnavailable(f"installing ftspec {commit[:12]} failed: "
                                  f"{(done.stderr or done.stdout)[-800:]}")
    return command


def current_purelib() -> str:
    return sysconfig.get_paths()["purelib"]
