"""The human view of `ftspec list`, drawn from the same rows `list --json` prints."""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.pace import duration, left_text, step_text
from rich.markup import escape

COLUMNS = ("NAME", "TARGET", "WHERE", "PHASE", "STEP", "LEFT", "LOSS", "AGE", "OUTPUT")
COLORS = {"Succeeded": "green", "Failed": "red", "Running": "cyan", "Pending": "yellow"}


def _cells(row: dict[str, Any]) -> list[str]:
    step = step_text(row) or "-"
    phase = row["phase"]
    if row.get("validity") == "invalid":
        phase += " (invalid)"
    name = row["name"]
    if row.get("spec_exists") is False:
        name += " (spec deleted)"
    loss = "-" if row.get("loss") is None else f"{row['loss']:.4f}"
    age = "" if row.get("age_s") is None else duration(row["age_s"])
    return [name, row["target"], row["where"], phase, step, left_text(row), loss, age,
            row.get("output") or ""]


def render_rows(rows: list[dict[str, Any]]) -> str:
    """A table (rich markup), or a line saying there is nothing."""
    if not rows:
        return "No runs found (`ftspec apply` starts one; SPEC arguments and --namespace / " \
               "--ray-address add places to look)."
    lines = table_lines(list(COLUMNS), [_cells(r) for r in rows], [r["phase"] for r in rows],
                        3)
    warned = [r for r in rows if r.get("warning")]
    if warned:  # why a pending or failed job does not start (its Warning Events)
        lines.append("")
        lines += [f"[yellow]{escape(r['name'])}:[/yellow] {escape(r['warning'])}"
                  for r in warned]
    return "\n".join(lines)


def table_lines(header: list[str], cells: list[list[str]], phases: list[str],
                phase_at: int) -> list[str]:
    """Aligned columns (rich markup): a bold header, each row's phase cell in its colour."""
    table = [header, *cells]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    out = []
    for n, line in enumerate(table):
        padded = [escape(cell.ljust(width)) for cell, width in zip(line, widths, strict=True)]
        if n == 0:
            out.append("[bold]" + "  ".join(padded).rstrip() + "[/bold]")
            continue
        color = COLORS.get(phases[n - 1])
        if color:
            padded[phase_at] = f"[{color}]{padded[phase_at]}[/{color}]"
        out.append("  ".join(padded).rstrip())
    return out
