"""`ftspec tune SPEC`: the fastest settings that fit, written as an overlay."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ftspec.cli.output import compiled_job, emit_json, print_diagnostics
from ftspec.cli.specs import spec_options
from ftspec.spec.text import escape_text

if TYPE_CHECKING:
    from ftspec.compiler.cpu_peak import CpuPeak
    from ftspec.compiler.tune import Tuned
    from ftspec.spec.ir import Job


def _peak_option(_ctx: click.Context, _param: click.Parameter,
                 value: str | None) -> tuple[float, float] | None:
    return _given_peak(value)


@click.command("tune")
@click.argument("spec_file", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=None,
              help="The overlay to write (default: SPEC's folder, NAME.tuned.yaml).")
@click.option("--margin", type=click.FloatRange(0.0, 0.9), default=0.1, show_default=True,
              help="Share of the device's memory the estimate must leave free.")
@click.option("--cpu-peak", "cpu_peak", default=None, metavar="GFLOPS,GBPS",
              callback=_peak_option,
              help="A CPU spec: this machine's peak as GFLOP/s in the spec's dtype and memory "
              "GB/s, instead of probing it (e.g. 20,5).")
@click.option("--cpu-probe", "cpu_probe", is_flag=True,
              help="A CPU spec: probe this machine's peak again instead of reading the cached "
              "probe.")
@click.option("--json", "as_json", is_flag=True, help="Print the same data as JSON.")
@spec_options
def command(spec_file: Path, out: Path | None, margin: float,
            cpu_peak: tuple[float, float] | None,
            cpu_probe: bool, as_json: bool, overlays: tuple[Path, ...],
            sets: tuple[str, ...]) -> int:
    """Search micro batch x accumulation (same global batch), activation checkpointing and
    DDP/FSDP for the highest predicted tokens/s whose memory estimate fits with MARGIN left,
    and write the choice as an overlay (apply it with -f). Never touches learning rate,
    data or method; writes nothing when the spec as written is already the fastest.
    A CPU spec run here is priced on this machine's CPU: a matmul and copy probe (about
    two seconds, kept in the cache for the next time) or --cpu-peak."""
    from ftspec.compiler.pipeline import SpecInput, compile_spec
    from ftspec.compiler.tune import cpu_refusal, overlay_text, tune, unpredicted


    source = SpecInput(spec_file, overlays, sets)
    result = compile_spec(source, "artifacts")
    job = compiled_job(result, as_json)
    if job is None:
        return 1
    diags = list(result.diagnostics)
    cpu, capacity = None, None
    if job.device != "cuda" and cpu_refusal(job) is None:
        cpu, capacity = _cpu(job, cpu_peak, cpu_probe)
    why = unpredicted(job, cpu, capacity)
    if why is not None:
        if as_json:
            emit_json({"ok": True, "tuned": False, "reason": why})
        else:
            click.echo(f"not tuned: {why}")
        return 0
    tuned = tune(source, job, margin, cpu, capacity)
    target = out or spec_file.with_name(f"{spec_file.stem}.tuned.yaml")
    if tuned.choice is not None:
        from ftspec.spec.safe_files import SafeDir

        text = overlay_text(tuned, spec_file.name)
        with SafeDir.open(target.parent, create=True, private=False) as folder:
            folder.write(target.name, text, mode=0o644)
    shadowed = _shadowed(tuned, sets)
    if as_json:
        emit_json({"ok": True, "tuned": tuned.choice is not None,
                   "shadowed_by_set": shadowed,
                   "margin": margin, "limit_gib": tuned.limit_gib,
                   "written": tuned.written.to_json(),
                   "choice": tuned.choice.to_json() if tuned.choice else None,
                   "gain": round(tuned.gain, 4),
                   "cpu_peak": _peak_json(tuned.cpu),
                   "overlay": str(target) if tuned.choice else None,
                   "candidates": [c.to_json() for c in tuned.candidates]})
        return 0
    print_diagnostics(diags, err=True)
    if tuned.cpu is not None:
        click.echo(f"CPU peak: {escape_text(tuned.cpu.describe())}")
    _render(tuned)
    if tuned.choice is None:
        click.echo("nothing beats the spec as written: no overlay written")
    else:
        click.echo(f"predicted +{100 * tuned.gain:.1f}% tokens/s per device; "
                   f"wrote {escape_text(str(target))} (apply it with -f)")
        if shadowed:
            click.echo(f"note: --set wins over -f: {escape_text(', '.join(shadowed))} given "
                       "with --set would undo the overlay; put those values in a file given "
                       "with -f before it", err=True)
    return 0


def _render(tuned: Tuned) -> None:
    from ftspec.cli.commands.explain import _table

    rows = []
    for c in tuned.candidates:
        s = c.setting
        mark = ("written" if c is tuned.written else "chosen" if c is tuned.choice else "")
        fits = "refused" if c.refused else ("yes" if c.fits else "no")
        speed = "-" if c.tokens_per_s is None else f"{c.tokens_per_s:,.0f}"
        mem = "-" if c.memory_gib is None else f"{c.memory_gib:g}"
        rows.append([str(s.micro_batch_size), str(s.gradient_accumulation_steps),
                     "on" if s.gradient_checkpointing else "off", s.strategy, mem, fits,
                     speed, mark])
    _table(f"candidates (fit: estimate <= {tuned.limit_gib:g} GiB, "
           f"{100 * tuned.margin:g}% of {tuned.capacity_gib:g} GiB free)",
           ["micro", "accum", "checkpointing", "strategy", "GiB", "fits",
            "tokens/s/device", ""], rows)
    refusals = Counter(c.refused for c in tuned.candidates if c.refused)
    for why, n in refusals.items():
        click.echo(f"  refused ({n}): {escape_text(why)}")


def _given_peak(text: str | None) -> tuple[float, float] | None:
    """``--cpu-peak GFLOPS,GBPS`` as (FLOP/s, bytes/s)."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 2 or not all(0 < v < 1e9 for v in values):
        raise click.BadParameter(
            f"{escape_text(text)!r}: give two positive numbers, GFLOP/s and GB/s (e.g. 20,5)",
            param_hint="--cpu-peak")
    return values[0] * 1e9, values[1] * 1e9


def _cpu(job: Job, given: tuple[float, float] | None,
         fresh: bool) -> tuple[CpuPeak, float | None]:
    """The CPU peak to price ``job`` on (given, cached or probed now) and this machine's
    memory per process, GiB."""
    from ftspec.compiler.cpu_peak import CpuPeak, measured_peak
    from ftspec.reconciler.local.capacity import GIB, Machine

    dtype = job.spec.model.dtype
    if given is not None:
        peak = CpuPeak(given[0], given[1], dtype, "given")
    else:
        peak = measured_peak(dtype, fresh=fresh)
    memory = Machine.here().memory_bytes
    return peak, (memory / GIB / max(job.procs_per_node, 1) if memory else None)


def _peak_json(peak: CpuPeak | None) -> dict[str, object] | None:
    if peak is None:
        return None
    return {"gflops": round(peak.flops / 1e9, 2), "memory_gbps": round(peak.memory_bps / 1e9, 2),
            "dtype": peak.dtype, "source": peak.source, "measured_at": peak.measured_at or None}


def _shadowed(tuned: Tuned, sets: tuple[str, ...]) -> list[str]:
    """The overlay's keys that ``sets`` also give (a ``--set`` wins over every ``-f``)."""
    if tuned.choice is None:
        return []
    written = {v.partition("=")[0] for v in tuned.choice.setting.sets(tuned.written.setting)}
    return sorted({v.partition("=")[0].strip() for v in sets} & written)
