"""Entry point: a click group whose commands load lazily (start-up stays fast).

Exit codes: 0 success; 1 errors, invalid specs and usage errors (as Terraform; 2 is
reserved for `plan --detailed-exitcode` meaning "changes"); 130 on Ctrl-C.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click
from ftspec.cli.errors import handle_unexpected
from ftspec.cli.project import rooted

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module under ftspec.cli.commands, one-line help)
    "validate": ("validate", "Check spec files against the schema and the semantic rules."),
    "schema": ("schema", "Print the JSON Schema of the spec format."),
    "explain": ("explain", "Show a spec's derived values, memory estimate and accelerator fit."),
    "tune": ("tune", "Find the fastest batch/checkpointing settings that fit; write an overlay."),
    "compile": ("compile", "Write a target's artifacts (torchtune, accelerate, kubeflow, ...)."),
    "plan": ("plan", "Show the changes apply would make to the live objects."),
    "apply": ("apply", "Apply specs (or a saved plan) to the live objects."),
    "show": ("show", "Print a saved plan (written by plan --out), or --json."),
    "destroy": ("destroy", "Delete the live objects these specs own."),
    "status": ("status", "Show each spec's job: phase, steps, loss, time left, outputs."),
    "logs": ("logs", "Print (or --follow) the logs of a spec's job."),
    "output": ("output", "Show what a spec's run produced: model/adapter, checkpoints, metrics."),
    "list": ("list_", "List the runs of this project, a Ray cluster or Kubernetes namespaces."),
    "import": ("import_", "Import another tool's config (torchtune, ...) as a spec."),
    "quickstart": ("quickstart", "Generate the tiny model, tokenizer and data of the quickstart."),
    "version": ("version", "Print the versions of ftspec and of the launchers it drives."),
    "completion": ("completion", "Print the shell completion script (bash, zsh, fish)."),
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"ftspec.cli.commands.{entry[0]}")
        command: click.Command = module.command
        from ftspec.cli.help_examples import with_examples

        return rooted(with_examples(command, cmd_name))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from ftspec.reconciler.applied import ftspec_version

        click.echo(f"ftspec {ftspec_version()}")
        ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Print the version and exit.")
@click.option("-v", "--debug", "debug", is_flag=True, default=False,
              help="Show tracebacks and debug logs.")
@click.option("-C", "--chdir", "chdir", default=None, metavar="DIR",
              type=click.Path(exists=True, file_okay=False),
              help="Run as if ftspec was started in DIR (paths are read from there).")
@click.pass_context
def cli(ctx: click.Context, debug: bool, chdir: str | None) -> None:
    """Declarative fine-tuning specs for LLMs: validate, compile, plan and apply.

    The project root is the nearest folder at or above the working directory (or -C DIR)
    that holds .ftspec/, else the working directory itself: the local state, the run
    folders and the spec's relative file:// paths are read from there."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    ctx.obj["chdir"] = chdir
    if chdir is not None:
        started = os.getcwd()
        os.chdir(chdir)
        ctx.call_on_close(lambda: os.chdir(started))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # pydantic looks for plugins by scanning every installed distribution's entry points
    # (~60 ms at each start-up); ftspec uses none. Setting the variable yourself wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    debug = "-v" in args or "--debug" in args or os.environ.get("FTSPEC_DEBUG") == "1"
    try:
        result: Any = _run(args)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return 1  # usage errors exit 1, like Terraform
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into a message
        return handle_unexpected(exc, debug)
    return int(result or 0)


def _run(args: list[str]) -> Any:
    """The command; then, once, why the compile cache was off if it was (a folder others
    may write to: ``ftspec.compiler.cache``)."""
    try:
        return cli.main(args=args, prog_name="ftspec", standalone_mode=False)
    finally:
        files = sys.modules.get("ftspec.compiler.cache_files")
        warning = files.take_warning() if files is not None else None
        if warning:
            from ftspec.spec.text import escape_text

            click.echo(f"warning: {escape_text(warning)}", err=True)
