"""`ftspec completion bash|zsh|fish`: the shell completion script, from click's own
shell-completion support (commands, options, spec files), to source from a shell's rc file."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def command(shell: str) -> int:
    """Print the completion script for SHELL (source it in the shell's startup file)."""
    from click.shell_completion import get_completion_class
    from ftspec.cli.main import cli

    completion = get_completion_class(shell)
    assert completion is not None  # the three shells click ships
    click.echo(completion(cli, {}, "ftspec", "_FTSPEC_COMPLETE").source())
    return 0
