"""Run the ``ftspec`` command in-process: exit code, stdout, stderr."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """``ftspec ARGS --json`` that succeeds: its JSON object."""
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data
