"""The script a Ray job runs first on its node (``runtime/unpack.py``) writes the
launcher's files into a predictable folder under /tmp: it must never write through a folder
or link that someone else prepared there."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from ftspec.runtime.unpack import UNPACK

FILES = {"config.yaml": "lr: 1\n", "command.sh": "echo hi\n"}


def unpack(run_dir: Path, files: dict[str, str] = FILES) -> subprocess.CompletedProcess[str]:
    payload = base64.b64encode(json.dumps(files).encode()).decode()
    env = {**os.environ, "FTSPEC_RUN_DIR": str(run_dir), "FTSPEC_FILES": payload}
    return subprocess.run([sys.executable, "-c", UNPACK], env=env, capture_output=True,
                          text=True, check=False)


def test_files_are_written_private(tmp_path: Path) -> None:
    run_dir = tmp_path / "ftspec" / "job-abc"
    done = unpack(run_dir)
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_text() for p in run_dir.iterdir()} == FILES
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((run_dir.parent).stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in run_dir.iterdir())
    again = unpack(run_dir, {"config.yaml": "lr: 2\n"})  # a rerun of the same submission
    assert again.returncode == 0 and (run_dir / "config.yaml").read_text() == "lr: 2\n"


def test_a_shared_writable_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ftspec"
    root.mkdir()
    os.chmod(root, 0o777)  # made by someone else, for everyone
    done = unpack(root / "job-abc")
    assert done.returncode != 0
    assert "is not a private folder" in done.stderr
    assert not (root / "job-abc" / "config.yaml").exists()


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    run_dir = tmp_path / "ftspec" / "job-abc"
    run_dir.mkdir(parents=True, mode=0o700)
    os.chmod(run_dir.parent, 0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run_dir / "config.yaml").symlink_to(victim)
    done = unpack(run_dir)
    assert done.returncode != 0
    assert victim.read_text() == "precious\n"


def test_a_linked_run_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    root = tmp_path / "ftspec"
    root.mkdir(mode=0o700)
    (root / "job-abc").symlink_to(elsewhere, target_is_directory=True)
    done = unpack(root / "job-abc")
    assert done.returncode != 0
    assert not list(elsewhere.iterdir())


def test_a_file_name_cannot_leave_the_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / "ftspec" / "job-abc"
    done = unpack(run_dir, {"../escaped.sh": "rm -rf ~\n"})
    assert done.returncode != 0
    assert not (tmp_path / "ftspec" / "escaped.sh").exists()
