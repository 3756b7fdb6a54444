"""The human view of `ftspec output --compare`, drawn from the same data `--json` prints."""

from __future__ import annotations

from typing import Any

from ftspec.cli.render_list import table_lines
from ftspec.cli.render_usage import USAGE_COLUMNS, usage_cells
from ftspec.reconciler.pace import duration
from rich.markup import escape

_MEASURED = ("RUNTIME", "TOKENS/S", "TOKENS/S/DEV", "PEAK MEM", *USAGE_COLUMNS, "VALIDITY")


def _number(value: Any, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}" if isinstance(value, float) \
        else str(value)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _cells(row: dict[str, Any], fields: list[str]) -> list[str]:
    m = row.get("measured") or {}
    metrics = row.get("metrics") or {}
    steps = "" if metrics.get("steps") is None else str(metrics["steps"])
    if steps and metrics.get("total_steps"):
        steps += f"/{metrics['total_steps']}"
    peak = m.get("peak_memory") or {}
    runtime = m.get("train_runtime_s")
    shared = _shared(row)
    phase = row["phase"] if row.get("applied", True) else NOT_APPLIED
    return [row["name"], *(_value(row["point"].get(f)) for f in fields), phase, steps,
            "" if row.get("final_loss") is None else f"{row['final_loss']:.4f}",
            shared(_runtime(runtime)),
            shared(_number(m.get("dataset_tokens_per_second"))),
            shared(_number(m.get("dataset_tokens_per_second_per_device"))),
            f"{peak['bytes'] / 2**20:.0f} MiB" if peak.get("bytes") else "",
            *usage_cells(m.get("resources") or {}),
            row.get("validity") or ""]


NOT_APPLIED = "not applied"
"""The phase cell of a point the backend has no run of."""

SHARED_MARK = "*"
"""After a runtime or throughput measured while another point of the sweep trained."""


def _shared(row: dict[str, Any]) -> Any:
    """Marks a measured time or rate of a point that ran at the same time as another."""
    marked = bool(row.get("ran_with"))
    return lambda cell: f"{cell}{SHARED_MARK}" if marked and cell else cell


def _runtime(seconds: float | None) -> str:
    """A measured runtime: tenths of a second under a minute (where points differ by
    them), a person's ``2m 05s`` above."""
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 60 else duration(seconds)


def render_comparison(data: dict[str, Any]) -> str:
    """A table of the points (rich markup): the fields that differ, then the results."""
    rows = data["points"]
    fields = list(data["fields"])
    header = ["NAME", *fields, "PHASE", "STEPS", "FINAL LOSS", *_MEASURED]
    plural = "s" if len(rows) != 1 else ""
    out = [f"Sweep of {escape(data['spec_file'])}: {len(rows)} point{plural}", ""]
    out += table_lines(header, [_cells(r, fields) for r in rows], [r["phase"] for r in rows],
                       1 + len(fields))
    shared = [r for r in rows if r.get("ran_with") and (r.get("measured") or {})]
    if shared:
        names = ", ".join(escape(r["name"]) for r in shared)
        out += ["", (f"{SHARED_MARK} measured while other points of the sweep trained on the "
                     f"same machine ({names}): RUNTIME and TOKENS/S include the contention; "
                     "sweep.max_parallel: 1 runs the points one at a time")]
    if rows and not any(r.get("applied", True) for r in rows):
        out += ["", (f"No point of this sweep has run yet: `ftspec apply "
                     f"{escape(data['spec_file'])}` starts them.")]
    if data.get("best"):
        best = next(r for r in rows if r["name"] == data["best"])
        out += ["", f"Lowest final loss: {escape(best['name'])} ({best['final_loss']:.4f})"]
    return "\n".join(out)
