"""Unexpected errors: one short message, the traceback only with --debug or in a file."""

from __future__ import annotations

import sys
import tempfile
import traceback
from pathlib import Path


def handle_unexpected(exc: BaseException, debug: bool) -> int:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if debug:
        sys.stderr.write(text)
        return 1
    log = Path(tempfile.gettempdir()) / "ftspec-crash.log"
    try:
        log.write_text(text, encoding="utf-8")
        where = f"the traceback is in {log}"
    except OSError:
        where = "re-run with --debug for the traceback"
    sys.stderr.write(
        f"ftspec: internal error: {type(exc).__name__}: {exc}\n"
        f"  This is a bug in ftspec; {where} (or re-run with --debug).\n"
    )
    return 1
