"""Output helpers shared by commands: plain vs colour, JSON, diagnostics."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.secrets import redact, redact_data

if TYPE_CHECKING:
    from ftspec.compiler.pipeline import Compiled
    from ftspec.spec.ir import Job
from ftspec.spec.text import escape_text


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal and never when NO_COLOR is set (https://no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") is not None:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def emit_json(payload: Any) -> None:
    """Every ``--json`` document: credentials redacted, non-finite numbers refused
    (``Infinity`` is not JSON)."""
    click.echo(json.dumps(redact_data(payload), indent=2, sort_keys=False, ensure_ascii=False,
                          allow_nan=False))


def write_error(path: Any, exc: OSError) -> click.ClickException:
    """A one-line error for an output path that cannot be written (exit 1)."""
    reason = exc.strerror or type(exc).__name__
    return click.ClickException(f"cannot write {escape_text(str(path))}: {reason}")


def safe_text(text: str) -> str:
    """Human output: credentials redacted, control characters (ANSI escapes, carriage
    returns) shown as escapes on each line; line breaks and tabs kept."""
    return "\n".join("\t".join(escape_text(part) for part in line.split("\t"))
                     for line in redact(text).split("\n"))


MAX_LINE_CHARS = 16 * 1024
"""A log line longer than this is cut in ``logs`` (``--raw`` prints it whole)."""
MAX_MESSAGE_CHARS = 4 * 1024
"""A state or reason message from a platform longer than this is cut in ``status``."""


def capped(text: str, limit: int, how: str = "") -> str:
    """``text`` cut at ``limit`` characters, with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [{len(text) - limit} more characters cut{how}]"


def log_line(line: str, *, raw: bool = False) -> str:
    """A job's log line for a terminal: credentials redacted (always), then cut at
    ``MAX_LINE_CHARS`` and control characters escaped (OSC clipboard writes, title changes,
    clear-screen), as every other command prints; ``raw`` keeps the line as written."""
    if raw:
        return redact(line)
    return safe_text(capped(redact(line), MAX_LINE_CHARS, "; `ftspec logs --raw` prints it whole"))


def render_diagnostic(diag: Diagnostic, color: bool) -> str:
    text = diag.format()
    if not color:
        return text
    head, _, rest = text.partition("\n")
    sev = diag.severity.value
    tint = "red" if diag.is_error else "yellow" if diag.severity is Severity.WARNING else "blue"
    head = head.replace(f": {sev}: ", ": " + click.style(f"{sev}:", fg=tint, bold=True) + " ", 1)
    if rest:
        rest = rest.replace("hint:", click.style("hint:", fg="cyan"))
        return head + "\n" + rest
    return head


def print_diagnostics(diags: Iterable[Diagnostic], *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    color = use_color(stream)
    for diag in diags:
        click.echo(render_diagnostic(diag, color), err=err, color=color)


def compiled_job(result: Compiled, as_json: bool) -> Job | None:
    """The job of a compile ``result``; None when it gave none, after showing why (its
    diagnostics on stderr, or ``{"ok": false, "diagnostics": [...]}`` with ``--json``): what
    a command that reads one compiled job (explain, tune) says before exiting 1."""
    if result.ok and result.job is not None:
        return result.job
    diags = list(result.diagnostics)
    if as_json:
        emit_json({"ok": False, "diagnostics": [d.to_json() for d in diags]})
    else:
        print_diagnostics(diags, err=True)
    return None


# rich's console-markup tag syntax (rich.markup.RE_TAGS): a run of backslashes, then a tag
_TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def plain_markup(markup: str) -> str | None:
    """What rich prints for ``markup`` on a stream without colour: the tags dropped, escaped
    tags kept as text. None when the text holds tabs or control characters (rich rewrites
    those; let it)."""
    if _CONTROL.search(markup):
        return None
    out: list[str] = []
    pos = 0
    for match in _TAG.finditer(markup):
        full, escapes, _tag = match.groups()
        start, end = match.span()
        out.append(markup[pos:start].replace("\\[", "["))  # "\[" outside a tag: a "["
        pairs, escaped = divmod(len(escapes), 2)
        out.append("\\" * pairs)
        if escaped:
            out.append(full[len(escapes):])
        pos = end
    out.append(markup[pos:].replace("\\[", "["))
    return "".join(out)


def print_markup(markup: str, *, err: bool = False) -> None:
    """Print rich console markup; without colour, skip importing rich (start-up time)."""
    stream = sys.stderr if err else sys.stdout
    markup = safe_text(markup)
    rich_styles = (use_color(stream) or getattr(stream, "isatty", lambda: False)()
                   or any(os.environ.get(v) for v in ("FORCE_COLOR", "TTY_COMPATIBLE")))
    text = None if rich_styles else plain_markup(markup)
    if text is None:
        from ftspec.cli.live import console

        console(err=err).print(markup)
        return
    stream.write(text + "\n")
