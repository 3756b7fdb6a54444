"""No planted link is followed where ftspec keeps or writes files (issue 20, item 2).

On main a link at ``.ftspec/state.lock`` got its target truncated, a dangling ``train.log``
link got its target created, links at ``launch/config.yaml`` and ``stop-requested`` got their
targets overwritten, and ``compile --out`` overwrote a linked ``command.sh`` target and made
it executable. Each test plants the link, runs ftspec, and checks that the target is as it
was and that the error names the link. Tests that start runs use a real supervisor of a
``sleep`` and run in a private PID namespace.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.local.backend import LocalBackend
from ftspec.reconciler.local.record import parse_record
from ftspec.reconciler.local.state import StateStore
from ftspec.reconciler.model import Action
from helpers.pidns import private_pid_namespace

from security.localstate import (
    RECORD,
    RUN_DIR,
    SPEC,
    SPEC_ID,
    Events,
    alive,
    apply_change,
    project,
    record_for,
    run_cli,
    sleep_after,
    wait_gone,
)

VICTIM_TEXT = "the victim's own content\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o644)
    return victim


def _untouched(victim: Path) -> None:
    assert victim.read_text() == VICTIM_TEXT
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_compile_out_refuses_a_linked_script(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    victim = _victim(tmp_path)
    out = root / "out"
    out.mkdir()
    (out / "command.sh").symlink_to(victim)
    code, text = run_cli(["compile", SPEC, "--target", "torchtune", "--out", "out"])
    assert code == 1 and "Traceback" not in text, text
    assert "out/command.sh" in text and "symbolic link" in text, text
    _untouched(victim)
    assert (out / "command.sh").is_symlink()  # refused, not removed
    (out / "command.sh").unlink()
    code, text = run_cli(["compile", SPEC, "--target", "torchtune", "--out", "out"])
    assert code == 0, text
    assert stat.S_IMODE((out / "command.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "config.yaml").stat().st_mode) == 0o644


@pytest.mark.parametrize("link", [".ftspec", ".ftspec/local", ".ftspec/state.lock"])
def test_state_folder_and_lock_links_are_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 link: str) -> None:
    """apply/destroy take the lock first: a planted link refuses them before anything
    runs (no process is started or signalled, so no namespace is needed)."""
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    victim = _victim(tmp_path)
    target = tmp_path / "victim-dir" if link != ".ftspec/state.lock" else victim
    if target != victim:
        target.mkdir()
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    (root / link).symlink_to(target)
    for args in (["apply", SPEC, "--auto-approve"], ["destroy", SPEC, "--auto-approve"],
                 ["status", SPEC]):
        code, text = run_cli(args)
        if link == ".ftspec/state.lock" and args[0] == "status":
            assert code == 0 and "Traceback" not in text, text  # status takes no lock
            continue
        assert code == 1, (args, text)
        assert "symbolic link" in text and link in text and "Traceback" not in text, text
    _untouched(victim)
    if target != victim:
        assert list(target.iterdir()) == []


@private_pid_namespace
@pytest.mark.parametrize("name", ["train.log", "launch/config.yaml", "supervisor.json",
                                  "exit.json"])
def test_run_folder_links_are_refused_at_start(tmp_path: Path, name: str) -> None:
    """A link planted in the run folder before a run starts (dangling or not): the start is
    refused, the target neither written, created nor removed; nothing runs."""
    root = project(tmp_path / "p")
    victim = _victim(tmp_path)
    dangling = tmp_path / "not-there.txt"
    for target in (victim, dangling):
        path = root / RUN_DIR / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.symlink_to(target)
        backend = LocalBackend(root, stop_grace_s=1)
        result = apply_change(backend, Action.CREATE, sleep_after())
        ((_, error),) = result.failed
        assert "symbolic link" in error and name in error, error
        assert not dangling.exists()
        _untouched(victim)
        assert path.is_symlink()
        assert backend.store.read(SPEC_ID) is None  # refused before the intent record


@private_pid_namespace
def test_links_planted_while_a_run_lives_are_refused(tmp_path: Path) -> None:
    """stop-requested (written by destroy) and exit.json (written by the supervisor when
    the run ends) planted as links during the run: neither target is written."""
    root = project(tmp_path / "p")
    victim = _victim(tmp_path)
    backend = LocalBackend(root, stop_grace_s=2)
    assert not apply_change(backend, Action.CREATE, sleep_after()).failed
    record = backend.store.read(SPEC_ID)
    assert record is not None and record.supervisor_pid is not None
    stop_file = root / RUN_DIR / "stop-requested"
    stop_file.symlink_to(victim)
    result = apply_change(backend, Action.DELETE, None)
    ((_, error),) = result.failed
    assert "symbolic link" in error and "stop-requested" in error, error
    assert alive(record.supervisor_pid)  # refused with the error, not stopped half-way
    _untouched(victim)
    stop_file.unlink()
    (root / RUN_DIR / "exit.json").symlink_to(victim)
    assert not apply_change(backend, Action.DELETE, None, Events()).failed
    assert wait_gone(record.supervisor_pid)
    _untouched(victim)


def test_records_are_private_and_a_linked_record_is_refused(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    (tmp_path / ".ftspec").mkdir(mode=0o755)

    store.write(parse_record(record_for(4242, 1.0e9), SPEC_ID))
    assert stat.S_IMODE((tmp_path / RECORD).stat().st_mode) == 0o600
    for folder in (".ftspec", ".ftspec/local"):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o700, folder
    victim = _victim(tmp_path)
    (tmp_path / RECORD).unlink()
    (tmp_path / RECORD).symlink_to(victim)
    with pytest.raises(BackendError, match="symbolic link"):
        store.read(SPEC_ID)
    with pytest.raises(BackendError, match="symbolic link"):
        store.write(parse_record(record_for(4242, 1.0e9), SPEC_ID))
    with pytest.raises(BackendError, match="symbolic link"):
        store.remove(SPEC_ID)
    _untouched(victim)
    assert os.path.islink(tmp_path / RECORD)
