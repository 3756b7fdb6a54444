"""`ftspec output SPEC [NAME]`: what the run produced (Terraform's `output`, for a training run).

The adapter / model location and checkpoints the run wrote, and its final metrics (train
and eval loss, steps, tokens, wall time), read from the run's files and logged metrics.
NAME prints one value alone (`adapter`, `model`, `train_loss`, ...) for scripts.
`--compare` (and any spec with a ``sweep``) prints the points side by side: the swept
fields that differ, phase, final loss, the measured properties and validity
(``reconciler.comparison``); `--plot` then overlays the points' loss curves. `--point
best|NAME` reads one point of a sweep as a run of its own (`ftspec output SWEEP adapter
--point best`: the adapter of the valid point with the lowest final loss).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from ftspec.cli.live import ConsoleReporter, connection_options, console
from ftspec.cli.specs import spec_options


@click.command("output")
@click.argument("spec", type=click.Path(path_type=Path))
@click.argument("name", required=False)
@spec_options
@connection_options
@click.option("--plot", "plot", type=click.Path(path_type=Path), default=None,
              help="Draw the loss and learning-rate curves to this PNG (needs matplotlib: "
                   "the [plot] extra).")
@click.option("--compare", is_flag=True,
              help="A table of the sweep's points: the fields that differ, final loss, "
                   "measured properties, validity (the default for a spec with a sweep).")
@click.option("--history", is_flag=True,
              help="List the earlier runs of SPEC that a replace or destroy kept (local "
                   "backend): generation, phase, steps, final loss, where they are.")
@click.option("--point", default=None, metavar="best|NAME",
              help="A sweep: read one point as a run of its own, by name (tiny-sweep-lr-1e-2, "
                   "or its label lr-1e-2), or best: the valid point with the lowest final "
                   "loss (as --compare picks it).")
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
def command(spec: Path, name: str | None, overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            plot: Path | None, compare: bool, history: bool, point: str | None,
            as_json: bool) -> int:
    """Show what SPEC's run produced: adapter / model, checkpoints, final metrics."""
    from ftspec.cli.live import CommandFailed, prepare_specs, report_error
    from ftspec.reconciler.backend import BackendError, Measurer
    from ftspec.reconciler.outputs import produced

    try:
        backend, desired = prepare_specs((spec,), overlays, sets, namespace, kubeconfig, context,
                                         identity_only=True)
        if history:
            return _history(backend, desired, as_json)
        if point is not None and compare:
            raise BackendError("--point reads one point; --compare shows every point",
                               hint="leave one of them out")
        if point is not None:
            desired = [_point(backend, desired, point, spec)]
        elif compare or len(desired) > 1:
            if name is not None:
                raise BackendError(f"{spec} is a sweep of {len(desired)} points: NAME reads "
                                   "one run's output",
                                   hint=f"name the point: `ftspec output {spec} {name} --point "
                                   "best` (or --point NAME); --compare --json has every "
                                   "point's")
            return _compare(backend, desired, plot, as_json)
        (status, *_) = backend.status(desired[0])
    except CommandFailed as exc:
        return exc.code
    except BackendError as exc:
        report_error(exc)
        return 1
    if not status.platform.get("exists", True) or status.phase.value == "Unknown":
        report_error(BackendError(f"{spec}: no run to read outputs from ({status.message})",
                                  hint="run `ftspec apply` first"))
        return 1
    data = produced(status)
    if isinstance(backend, Measurer):
        try:
            data["measured"] = backend.measured(desired[0], ConsoleReporter())
        except BackendError as exc:
            report_error(exc)
            return 1
    if plot is not None:
        code = _plot(status.metrics, plot, f"{status.address} ({status.phase.value})")
        if code:
            return code
    if name is not None:
        value = _lookup(data, name)
        if value is None:
            report_error(BackendError(f"no output named {name!r} for this run",
                                      hint="names: " + ", ".join(sorted(_names(data)))))
            return 1
        if as_json:
            from ftspec.cli.output import emit_json

            emit_json(value)
        else:
            from ftspec.spec.secrets import redact

            click.echo(redact(str(value) if not isinstance(value, list)
                              else "\n".join(map(str, value))))
        return 0
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(data)
        return 0
    out = console()
    for line in _render(data):
        out.print(line, markup=False)
    if plot is not None:
        out.print(f"\nCurves drawn to {plot}", markup=False)
    return 0


def _history(backend: Any, desired: list[Any], as_json: bool) -> int:
    from ftspec.reconciler.backend import BackendError, KeepsHistory

    if not isinstance(backend, KeepsHistory):
        raise BackendError(f"the {backend.name} backend keeps no earlier runs",
                           hint="a cluster keeps what its jobs wrote where they wrote it")
    rows = [{"address": d.job.spec_id, **g} for d in desired for g in backend.history(d)]
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(rows)
        return 0
    if not rows:
        console().print("No earlier runs kept: a replace or destroy keeps the run it ends.",
                        markup=False)
        return 0
    import time

    from ftspec.cli.output import print_markup
    from ftspec.cli.render_list import table_lines
    from ftspec.reconciler.pace import duration

    cells = [[g["address"], str(g["generation"]), str(g.get("phase") or "-"),
              "-" if g.get("steps") is None else str(g["steps"]),
              f"{g['final_loss']:.4f}" if isinstance(g.get("final_loss"), float) else "-",
              duration(time.time() - g["started_at"]) if isinstance(
                  g.get("started_at"), (int, float)) else "-", g["path"]] for g in rows]
    print_markup("\n".join(table_lines(["NAME", "GEN", "PHASE", "STEP", "LOSS", "AGE",
                                        "KEPT IN"], cells,
                                       [str(g.get("phase") or "") for g in rows], 2)))
    return 0


def _point(backend: Any, desired: list[Any], point: str, spec: Path) -> Any:
    """The point ``--point`` names; ``best``: the comparison's best (the valid point with the
    lowest final loss)."""
    from ftspec.cli.points import one_point

    if point != "best":
        return one_point(desired, point, spec)
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.comparison import compare

    best = compare(backend, desired, ConsoleReporter()).best
    if best is None:
        raise BackendError(f"{spec}: no point has succeeded with a valid final loss yet, so "
                           "none is best", hint=f"`ftspec output {spec} --compare` shows each "
                           "point's phase and validity")
    return next(d for d in desired if d.job.name == best.name)


def _compare(backend: Any, desired: list[Any], plot: Path | None, as_json: bool) -> int:
    from ftspec.reconciler.comparison import compare

    table = compare(backend, desired, ConsoleReporter())
    data = table.to_json()
    if plot is not None:
        name = desired[0].job.spec.metadata.name
        curves = [(r.name, r.curve) for r in table.rows if r.curve.get("step")]
        code = _plot_points(curves, plot, f"sweep {name}: {len(table.rows)} points "
                            f"({', '.join(table.fields) or 'one point'})")
        if code:
            return code
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(data)
        return 0
    from ftspec.cli.output import print_markup
    from ftspec.cli.render_compare import render_comparison

    print_markup(render_comparison(data))
    if plot is not None:
        console().print(f"\nCurves drawn to {plot}", markup=False)
    return 0


def _plot_points(curves: list[tuple[str, dict[str, Any]]], path: Path, title: str) -> int:
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError

    try:
        from ftspec.cli.plot import draw_overlay
    except ImportError:
        report_error(BackendError("--plot needs matplotlib", hint="pip install 'ftspec[plot]'"))
        return 1
    if not curves:
        report_error(BackendError("no point has recorded steps to plot yet"))
        return 1
    draw_overlay(curves, path, title)
    return 0


def _names(data: dict[str, Any]) -> dict[str, Any]:
    flat = {k: v for k, v in data.items() if k not in ("metrics", "location", "measured")}
    return {**flat, **data.get("location", {}), **data.get("metrics", {}),
            **data.get("measured", {})}


def _lookup(data: dict[str, Any], name: str) -> Any:
    return _names(data).get(name)


def _render(data: dict[str, Any]) -> list[str]:
    loc = data.get("location") or {}
    lines = [f"{data['address']} ({data['phase']})"]
    where = loc.get("uri") or loc.get("path")
    rows: list[tuple[str, Any]] = [("output", where)]
    if loc.get("kind") not in (None, "file") and loc.get("path"):
        rows.append(("mounted at", loc["path"]))
    rows += [("hub_repo", loc.get("hub_repo")), ("adapter", data.get("adapter")),
             ("model", data.get("model"))]
    checkpoints = data.get("checkpoints") or []
    if checkpoints:
        rows.append(("checkpoints", ", ".join(checkpoints)))
    if data.get("tensorboard"):
        rows.append(("tensorboard", ", ".join(data["tensorboard"])))
    if loc.get("exists") is False:
        rows.append(("files", "none yet (or not visible from this machine)"))
    metrics = data.get("metrics") or {}
    for key, value in metrics.items():
        rows.append((key, f"{value:.4f}" if isinstance(value, float) and "loss" in key
                     else value))
    rows += _measured_rows(data.get("measured") or {})
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k:<{width}} = {v}" for k, v in rows if v not in (None, "", [])]
    return lines


def _measured_rows(m: dict[str, Any]) -> list[tuple[str, Any]]:
    """The measured properties (``reconciler.measured``) as output rows."""
    validity = m.get("validity")
    if validity and m.get("validity_reason"):
        validity = f"{validity} ({m['validity_reason']})"
    rows: list[tuple[str, Any]] = [("validity", validity),
                                   ("train_runtime_s", m.get("train_runtime_s"))]
    if m.get("dataset_tokens") is not None:
        rows.append(("dataset_tokens", f"{m['dataset_tokens']} ({m.get('dataset_tokens_how')})"))
    elif m.get("dataset_tokens_how"):
        rows.append(("dataset_tokens", f"unknown: {m['dataset_tokens_how']}"))
    rows += [("dataset_tokens_per_second", m.get("dataset_tokens_per_second")),
             ("dataset_tokens_per_second_per_device",
              m.get("dataset_tokens_per_second_per_device"))]
    if m.get("stopped_by"):
        rows.append(("stopped_by", f"{m['stopped_by']} after step {m.get('stopped_at_step')}"))
    w = m.get("stable_window")
    if isinstance(w, dict):  # measured.json is read back: no key is taken for granted
        rows.append(("stable_window", f"steps {w.get('from_step')}..{w.get('to_step')}: "
                     f"{w.get('tokens')} tokens in {w.get('seconds')} s"
                     + ("" if w.get("complete") else " (the rule did not complete)")))
        rows += [("dataset_tokens_per_second_stable", m.get("dataset_tokens_per_second_stable")),
                 ("dataset_tokens_per_second_stable_per_device",
                  m.get("dataset_tokens_per_second_stable_per_device"))]
    peak = m.get("peak_memory")
    if peak:
        rows.append(("peak_memory", f"{peak['bytes'] / 2**30:.3f} GiB ({peak['kind']})"))
    if isinstance(m.get("resources"), dict):
        from ftspec.cli.render_usage import usage_rows

        rows += usage_rows(m["resources"])
    missing = m.get("unavailable")
    if isinstance(missing, dict):  # what the cluster cannot tell (Kubernetes), and why
        from ftspec.spec.text import escape_text

        shown = {k for k, v in rows if v not in (None, "", [])}
        rows += [(str(k), "unavailable: " + escape_text(str(why))) for k, why in missing.items()
                 if k not in shown]
    return rows


def _plot(metrics: dict[str, Any], path: Path, title: str) -> int:
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError

    try:
        from ftspec.cli.plot import draw_curves
    except ImportError:
        report_error(BackendError("--plot needs matplotlib",
                                  hint="pip install 'ftspec[plot]'"))
        return 1
    curve = metrics.get("curve") or {}
    if not curve.get("step"):
        report_error(BackendError("no recorded steps to plot yet"))
        return 1
    draw_curves(curve, path, title)
    return 0
