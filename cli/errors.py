"""Unexpected errors: one short message, the traceback only with --debug or in a file.

The crash log lies in a per-user folder (``$XDG_STATE_HOME/ftspec`` or
``~/.local/state/ftspec``, mode 0700), under a new name each time, created exclusively with
mode 0600, and redacted (``ftspec.spec.secrets.redact``). The message on stderr names the
exception's type only, because an exception can quote the input that caused it.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from ftspec.spec.secrets import redact
from ftspec.spec.text import escape_text


def crash_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "ftspec"


def write_crash_log(text: str) -> Path:
    """A new private file holding ``text`` (already redacted); raises OSError."""
    folder = crash_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or st.st_uid != os.getuid():
        raise OSError(f"{folder} is not a private folder of this user")
    os.chmod(folder, 0o700)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for n in range(100):
        path = folder / f"crash-{stamp}-{os.getpid()}-{n}.log"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
        return path
    raise OSError("no free crash log name")


def handle_unexpected(exc: BaseException, debug: bool) -> int:
    text = redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    if debug:
        sys.stderr.write(text)
        return 1
    try:
        where = f"the traceback is in {write_crash_log(text)}"
    except OSError:
        where = "re-run with --debug for the traceback"
    # the message stays in the log: an exception may quote input in a form no pattern knows
    sys.stderr.write(
        f"ftspec: internal error: {escape_text(type(exc).__name__)}\n"
        f"  This is a bug in ftspec; {where} (or re-run with --debug).\n"
    )
    return 1
