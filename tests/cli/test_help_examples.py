"""Every command's --help ends with an Examples section, and every example parses: the
command exists and takes the flags and arguments it shows (run in the repository root,
where the examples' spec files are)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
import pytest
from ftspec.cli.help_examples import EXAMPLES
from ftspec.cli.main import COMMANDS, cli
from helpers.cli_run import run

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_has_examples() -> None:
    assert sorted(EXAMPLES) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_the_examples(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, name, "--help")
    assert code == 0
    assert "\n  Examples:\n" in out, out
    for line, what in EXAMPLES[name]:
        assert f"    {line}" in out and f"# {what}" in out, out


@pytest.mark.parametrize(("name", "line"), [(n, line) for n, rows in sorted(EXAMPLES.items())
                                            for line, _ in rows])
def test_each_example_parses(name: str, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    words = shlex.split(line.partition(">")[0])
    assert words[0] == "ftspec"
    group_ctx = cli.make_context("ftspec", [name], resilient_parsing=True)
    command = cli.get_command(group_ctx, words[1])
    assert command is not None, f"no command {words[1]}"
    with command.make_context(words[1], words[2:], parent=group_ctx) as ctx:  # raises on a bad flag
        assert isinstance(ctx, click.Context)
