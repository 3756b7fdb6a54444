"""Who holds the local state lock: written into the lock file by its holder, read back by
the apply that finds it busy, so that apply can say whom it waits for and since when
(Terraform's lock info: who, operation, created).

The file is read back from disk by another process: bounded, and a content that is not
ours shows as ``unknown holder``, never as an error.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import time

MAX_BYTES = 4096


def holder_record() -> bytes:
    """This process as the lock's holder (pid, user, command line, since)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    command = " ".join(["ftspec", *sys.argv[1:]])[:300]
    return (json.dumps({"pid": os.getpid(), "user": user, "command": command,
                        "since": time.time()}) + "\n").encode()


def describe(raw: bytes) -> str:
    """``pid 123 (user alice, `ftspec apply a.yaml`) since 15:02:11 UTC, 4 s ago``."""
    text = raw[:MAX_BYTES].decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return f"pid {text}" if text.isdigit() else "an unknown holder"
    pid, user, command, since = (data.get("pid"), data.get("user"), data.get("command"),
                                 data.get("since"))
    out = f"pid {pid}" if isinstance(pid, int) else "an unknown process"
    who = [f"user {user}"] if isinstance(user, str) else []
    if isinstance(command, str):
        who.append(f"`{command}`")
    if who:
        out += f" ({', '.join(who)})"
    if isinstance(since, (int, float)) and not isinstance(since, bool) \
            and 0 <= since < 1e11:  # a time this file may hold (NaN, inf, huge: none)
        clock = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
        out += f" since {clock}, {max(0.0, time.time() - since):.0f} s ago"
    return out


def read_holder(fd: int) -> str:
    try:
        return describe(os.pread(fd, MAX_BYTES, 0))
    except OSError:
        return "an unknown holder"
