"""``ftspec.spec.safe_files``: writes and reads that follow no link below their base."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest
from ftspec.spec.safe_files import SafeDir, UnsafePathError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_folders_and_files(tmp_path: Path) -> None:
    with SafeDir.open(tmp_path, "a/b", create=True) as folder:
        folder.write("x.json", "{}\n")
        folder.write("deep/er/y.txt", b"y", create_dirs=True)
    assert _mode(tmp_path / "a") == _mode(tmp_path / "a/b") == 0o700
    assert _mode(tmp_path / "a/b/deep/er") == 0o700
    assert _mode(tmp_path / "a/b/x.json") == 0o600
    assert (tmp_path / "a/b/deep/er/y.txt").read_bytes() == b"y"
    assert sorted(p.name for p in (tmp_path / "a/b").iterdir()) == ["deep", "x.json"]


def test_a_wider_folder_of_ours_is_narrowed(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir(mode=0o777)
    os.chmod(tmp_path / "s", 0o777)
    SafeDir.open(tmp_path, "s").close()
    assert _mode(tmp_path / "s") == 0o700


def test_another_users_folder_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    (tmp_path / "s").mkdir()
    os.chown(tmp_path / "s", 65534, 65534)
    with pytest.raises(UnsafePathError, match="belongs to another user"):
        SafeDir.open(tmp_path, "s")


@pytest.mark.parametrize("at", ["a", "a/b"])
def test_a_linked_folder_on_the_way_is_refused(tmp_path: Path, at: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "base").mkdir()
    if at == "a/b":
        (tmp_path / "base/a").mkdir()
    (tmp_path / "base" / at).symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        SafeDir.open(tmp_path / "base", "a/b/c", create=True)
    assert list(elsewhere.iterdir()) == []


def test_a_linked_file_is_neither_written_read_removed_nor_renamed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    dangling = tmp_path / "nothing"
    with SafeDir.open(tmp_path, "s", create=True) as folder:
        os.symlink(victim, tmp_path / "s/f")
        os.symlink(dangling, tmp_path / "s/g")
        for name in ("f", "g"):
            with pytest.raises(UnsafePathError, match="symbolic link"):
                folder.write(name, "new")
            with pytest.raises(UnsafePathError):
                folder.read(name)
            with pytest.raises(UnsafePathError):
                folder.unlink(name)
            with pytest.raises(UnsafePathError):
                folder.open_fd(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            with pytest.raises(UnsafePathError):
                folder.rename(name, "h")
        with pytest.raises(FileExistsError):
            folder.create_new("g", "new")
    assert victim.read_text() == "keep" and not dangling.exists()
    assert (tmp_path / "s/f").is_symlink() and (tmp_path / "s/g").is_symlink()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    with SafeDir.open(tmp_path, "s", create=True) as folder:
        os.mkfifo(tmp_path / "s/p")
        done: list[BaseException] = []

        def attempt() -> None:
            for op in (lambda: folder.read("p"),
                       lambda: folder.open_fd("p", os.O_WRONLY | os.O_APPEND)):
                try:
                    op()
                except OSError as exc:
                    done.append(exc)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(5)
        assert not worker.is_alive(), "blocked on a FIFO"
        assert len(done) == 2 and all(isinstance(e, UnsafePathError) for e in done), done


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a//b", "./a", ""])
def test_names_that_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    with SafeDir.open(tmp_path, "s", create=True) as folder, pytest.raises(UnsafePathError):
        folder.write(name, "x", create_dirs=True)
    with pytest.raises(UnsafePathError):
        SafeDir.open(tmp_path, name or "..")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with SafeDir.open(tmp_path, "s", create=True) as folder:
        folder.write("r.json", "old")

        def full(fd: int, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "write", full)
        with pytest.raises(OSError, match="No space left"):
            folder.write("r.json", "new")
    assert (tmp_path / "s/r.json").read_text() == "old"
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["r.json"]


def test_mode_is_set_on_the_new_file_only(tmp_path: Path) -> None:
    with SafeDir.open(tmp_path, private=False) as folder:
        folder.write("run.sh", "echo\n", mode=0o755)
        folder.write("run.sh", "echo 2\n", mode=0o755)
        folder.write("c.yaml", "a: 1\n", mode=0o644)
    assert _mode(tmp_path / "run.sh") == 0o755 and _mode(tmp_path / "c.yaml") == 0o644


def test_reads_are_bounded(tmp_path: Path) -> None:
    with SafeDir.open(tmp_path, "s", create=True) as folder:
        folder.write("big", b"x" * 100)
        assert folder.read("big", limit=100) == b"x" * 100
        with pytest.raises(OSError, match="larger than 10 bytes"):
            folder.read("big", limit=10)
        assert folder.read("absent") is None
        assert folder.read("no/such/dir/file") is None
