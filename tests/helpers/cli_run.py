"""Run the ``ftspec`` command in-process: exit code, stdout, stderr."""

from __future__ import annotations

import pytest
from ftspec.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err
