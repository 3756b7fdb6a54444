"""``ftspec completion SHELL`` prints click's completion script, and the installed console
script answers the completion protocol that script speaks (commands, then their flags)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ftspec.cli.main import main

FTSPEC = str(Path(sys.executable).parent / "ftspec")


@pytest.mark.parametrize("shell,marker", [("bash", "_FTSPEC_COMPLETE=bash_complete"),
                                          ("zsh", "_FTSPEC_COMPLETE=zsh_complete"),
                                          ("fish", "_FTSPEC_COMPLETE=fish_complete")])
def test_the_script_names_the_protocol(shell: str, marker: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    assert marker in capsys.readouterr().out


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_FTSPEC_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    done = subprocess.run([FTSPEC], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line]


def test_the_console_script_completes_commands_and_flags() -> None:
    assert "plan" in _complete("ftspec pl", 1)
    assert _complete("ftspec plan --detailed", 2) == ["--detailed-exitcode"]
    assert set(_complete("ftspec completion ", 2)) == {"bash", "zsh", "fish"}


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) == 1
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in capsys.readouterr().err
