"""`ftspec explain SPEC`: derived values, memory estimate and per-accelerator fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from ftspec.cli.output import emit_json, print_diagnostics, use_color
from ftspec.cli.specs import spec_options
from ftspec.compiler.units import count, size


@click.command("explain")
@click.argument("spec_file", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the same data as JSON.")
@click.option("--families", is_flag=True, help="List the known model families.")
@spec_options
def command(spec_file: Path | None, as_json: bool, families: bool,
            overlays: tuple[Path, ...], sets: tuple[str, ...]) -> int:
    """Show what SPEC_FILE means: batch math, steps, memory per device and where it fits."""
    from ftspec.compiler.explain import explain_data, families_data

    if families:
        rows = families_data()
        if as_json:
            emit_json(rows)
        else:
            _table("Model families", list(rows[0]), [[_cell(v) for v in r.values()] for r in rows])
        return 0
    if spec_file is None:
        raise click.UsageError("give a SPEC_FILE (or --families)")
    from ftspec.compiler.pipeline import SpecInput, compile_spec

    result = compile_spec(SpecInput(spec_file, overlays, sets), "identity")
    diags = list(result.diagnostics)
    if not result.ok or result.job is None:
        if as_json:
            emit_json({"ok": False, "diagnostics": [d.to_json() for d in diags]})
        else:
            print_diagnostics(diags, err=True)
        return 1
    data = explain_data(result.job)
    if as_json:
        emit_json(data)
        return 0
    print_diagnostics(diags, err=True)
    render(data)
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def render(data: dict[str, Any]) -> None:
    derived = dict(data["derived"])
    lora = derived.pop("lora")
    rows = [[k.replace("_", " "), _cell(v)] for k, v in derived.items()]
    if lora:
        rows += [[f"lora {k.replace('_', ' ')}", _cell(v)] for k, v in lora.items()]
    _table(f"{data['name']}: derived values", ["quantity", "value"], rows)
    mem = data["memory"]
    parts = ["weights", "gradients", "optimizer", "activations", "logits", "overhead", "total"]
    cpu = derived.get("device") == "cpu"
    # the estimate keeps hundredths of a GiB: a part that rounds to none is under 10 MiB
    mrows = [[p, size(mem[p + "_gib"]) if mem[p + "_gib"] else "< 10 MiB"] for p in parts]
    mrows.append(["trainable params", _params(mem["trainable_params_b"], mem["params_b"])])
    _table(f"memory per {'process' if cpu else 'device'} (estimate)", ["component", "size"],
           mrows)
    for note in mem["notes"]:
        click.echo(f"  note: {note}")
    if not cpu:  # a CPU run fits no accelerator: no table of them
        arows = [[a["display"], size(a["capacity_gib"]), "fits" if a["fits"] else "no",
                  ("+" if a["headroom_gib"] >= 0 else "-") + size(abs(a["headroom_gib"])),
                  "" if a["bf16"] else "no bf16"] for a in data["accelerators"]]
        _table("fit by accelerator (same topology)", ["accelerator", "memory", "fits",
                                                       "headroom", "note"], arows)
    fits = mem["fits"]
    line = data["verdict"]
    if use_color():
        line = click.style(line, fg="green" if fits or fits is None else "red", bold=not fits)
    click.echo(line)


def _params(trainable_b: float, total_b: float) -> str:
    """``16K of 115K (14%)``: parameter counts given in billions."""
    share = f" ({100 * trainable_b / total_b:.2g}%)" if total_b else ""
    return f"{count(trainable_b * 1e9)} of {count(total_b * 1e9)}{share}"


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    if use_color():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for h in header:
            table.add_column(h)
        for r in rows:
            table.add_row(*r)
        Console().print(table)
        return
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    click.echo(title)
    for r in [header, *rows]:
        click.echo("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    click.echo("")
