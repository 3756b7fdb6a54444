"""`ftspec explain SPEC`: derived values, memory estimate and per-accelerator fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from ftspec.cli.output import compiled_job, emit_json, print_diagnostics, use_color
from ftspec.cli.pricing import pricing_option, read_prices
from ftspec.cli.specs import spec_options
from ftspec.compiler.units import count, size


@click.command("explain")
@click.argument("spec_file", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the same data as JSON.")
@click.option("--families", is_flag=True, help="List the known model families.")
@pricing_option
@spec_options
def command(spec_file: Path | None, as_json: bool, families: bool,
            overlays: tuple[Path, ...], sets: tuple[str, ...], pricing: Path | None) -> int:
    """Show what SPEC_FILE means: batch math, steps, memory per device and where it fits,
    and the predicted time (and cost, with --pricing)."""
    from ftspec.cli.live import CommandFailed
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
    job = compiled_job(result, as_json)
    if job is None:
        return 1
    diags = list(result.diagnostics)
    try:
        prices = read_prices(pricing)
    except CommandFailed as exc:
        return exc.code
    data = explain_data(job, prices)
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
    _time(data["time"])
    fits = mem["fits"]
    line = data["verdict"]
    if use_color():
        line = click.style(line, fg="green" if fits or fits is None else "red", bold=not fits)
    click.echo(line)


def _time(est: dict[str, Any]) -> None:
    """The time estimate's terms, or why there is none."""
    from ftspec.compiler.time_cost import band_text, duration

    if "unpredicted" in est:
        click.echo(f"  time: not predicted: {est['unpredicted']}")
        if "tokens_per_s_per_device" in est:
            click.echo(f"  throughput: ~{est['tokens_per_s_per_device']:,.0f} tokens/s per "
                       "device (predicted)")
        click.echo("")
        return
    t = est["terms"]
    rows = [
        ["wall time", band_text(est["seconds"], est["band"])],
        ["  startup (load, warm-up)", duration(t["startup_s"])],
        [f"  {est['steps']} steps", f"{duration(t['train_s'])} at {t['step_s']:.3g} s/step"],
        [f"  {t['saves']} checkpoint saves", duration(t["saves_s"])],
        ["tokens/s per device", f"{t['tokens_per_s_per_device']:,.0f}"],
        ["FLOPs per token", f"{t['flops_per_token']:.3g}"],
        ["step at peak: compute / memory", f"{t['compute_s']:.3g} s / {t['memory_s']:.3g} s"],
        ["  LoRA adapter traffic", f"{t['adapter_s']:.3g} s"],
        ["  communication", f"{t['comm_s']:.3g} s"],
        ["launcher efficiency (fitted)", f"{t['efficiency']:.3g}"],
        ["device-hours", f"{est['device_hours']:.3g} on {est['devices']}x {est['accelerator']}"],
    ]
    if est["cost"] is not None:
        clow, chigh = est["cost_range"]
        price = est["price_per_device_hour"]
        cost = f"~{est['cost']:.2f} ({clow:.2f}–{chigh:.2f}) at {price:g} per device-hour"
        rows.append(["cost", cost])
    _table(f"time (estimate, ±{100 * est['band']:.0f}%: the fit's leave-one-out error)",
           ["term", "value"], rows)


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
