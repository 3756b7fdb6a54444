"""apply / destroy: plan (or load a saved plan), show it, confirm, apply, optionally wait."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ftspec.cli.live import (
    CommandFailed,
    ConsoleReporter,
    confirm,
    console,
    prepare_specs,
    report_error,
)
from ftspec.reconciler import engine
from ftspec.reconciler.backend import BackendError, Desired, StalePlanError
from ftspec.reconciler.model import Action, ApplyResult, Phase, Plan, Status


def _load(specs: tuple[Path, ...], plan_file: Path | None, overlays: tuple[Path, ...],
          sets: tuple[str, ...], kubeconfig: str | None, context: str | None,
          namespace: str | None, force_conflicts: bool, destroy: bool,
          replacing: tuple[str, ...] = ()) -> tuple[Any, Plan, list[Desired], bool]:
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.saved import is_saved_plan, load_plan

    options = BackendOptions(kubeconfig, context, force_conflicts)
    if plan_file is not None:  # named as a plan: bound to its specs before anything runs
        from ftspec.reconciler.bound import bind

        if specs or overlays or sets or namespace or replacing:
            raise BackendError("a saved plan is applied on its own: it names its spec files, "
                               "overlays, --set values, namespace and --replace addresses itself",
                               hint=f"run `ftspec apply --plan {plan_file}` with no spec "
                               "files, -f, --set, --namespace or --replace")
        bound = bind(load_plan(plan_file), options)
        return bound.backend, bound.plan, list(bound.desired), True
    if not specs:
        raise BackendError("nothing to apply", hint="name spec files, or a saved plan with "
                           "`--plan FILE`")
    for path in specs:  # a file that holds a plan is never taken for a spec
        if is_saved_plan(path):
            raise BackendError(
                f"{path} holds a saved ftspec plan, not a spec: nothing was applied",
                hint=f"to apply that plan, name it as one: `ftspec apply --plan {path}`"
                + (" (destroy takes spec files only)" if destroy else ""))
    backend, desired = prepare_specs(specs, overlays, sets, namespace, kubeconfig, context,
                                     force_conflicts=force_conflicts, identity_only=destroy)
    plan = backend.plan_destroy(desired) if destroy else engine.plan(backend, desired,
                                                                      replacing)
    return backend, plan, desired, False


@dataclass(frozen=True)
class _Applied:
    """What an apply went through: the backend, the plan, the specs (a saved plan's: those
    it was bound to), whether the plan was a saved one, and what the backend did."""

    backend: Any
    plan: Plan
    desired: list[Desired]
    saved: bool
    result: ApplyResult


def run_apply(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...], *,
              plan_file: Path | None = None, kubeconfig: str | None, context: str | None, namespace: str | None,
              auto_approve: bool, force_conflicts: bool, wait: bool, timeout: float | None,
              as_json: bool, destroy: bool, replacing: tuple[str, ...] = (),
              verbose: bool = False) -> int:
    applied = _plan_and_apply(specs, plan_file, overlays, sets, kubeconfig=kubeconfig,
                              context=context,
                              namespace=namespace, auto_approve=auto_approve,
                              force_conflicts=force_conflicts, as_json=as_json, destroy=destroy,
                              replacing=replacing, verbose=verbose)
    if isinstance(applied, int):
        return applied
    result = applied.result
    ok_data = {"applied": [c.address for c in result.applied],
               "failed": [{"address": a, "message": m} for a, m in result.failed]}
    if as_json and not wait:
        from ftspec.cli.output import emit_json

        emit_json({**ok_data, "ok": result.ok})
    if not as_json:
        _print_outcome(result, destroy, wait=wait,
                       specs=" ".join(dict.fromkeys(d.spec_file for d in applied.desired)))
    if not result.ok:
        return 1
    if wait and not destroy:
        return _follow(applied, timeout, as_json, ok_data)
    return 0


def _plan_and_apply(specs: tuple[Path, ...], plan_file: Path | None,
                    overlays: tuple[Path, ...], sets: tuple[str, ...], *, kubeconfig: str | None, context: str | None,
                    namespace: str | None, auto_approve: bool, force_conflicts: bool,
                    as_json: bool, destroy: bool, replacing: tuple[str, ...] = (),
                    verbose: bool = False) -> _Applied | int:
    """Plan (or load the saved plan), show it, confirm, apply; the exit code where it stops
    (the error reported)."""
    try:
        backend, plan, desired, saved = _load(specs, plan_file, overlays, sets, kubeconfig,
                                              context, namespace, force_conflicts, destroy,
                                              replacing)
        if not _shown_and_confirmed(plan, saved=saved, destroy=destroy, as_json=as_json,
                                    auto_approve=auto_approve, verbose=verbose):
            return 1
        result = engine.apply(backend, plan, ConsoleReporter(quiet=as_json))
    except CommandFailed as exc:
        return exc.code
    except StalePlanError as exc:
        report_error(exc if plan_file is not None else _not_saved(exc))
        return 1
    except BackendError as exc:
        report_error(exc)
        return 1
    return _Applied(backend, plan, desired, saved, result)


def _shown_and_confirmed(plan: Plan, *, saved: bool, destroy: bool, as_json: bool,
                         auto_approve: bool, verbose: bool = False) -> bool:
    """Print the plan (not with --json) and ask before changing anything, unless the plan
    changes nothing or was saved (approved when it was made); False: the user declined."""
    from ftspec.cli.render_plan import render_plan

    out = console()
    data = plan.to_json()
    if not as_json:
        out.print(render_plan(data, destroy=destroy, out_hint=not saved, verbose=verbose))
    if plan.has_changes and not saved:
        question = ("Do you really want to destroy all objects of these specs?" if destroy
                    else "Do you want to perform these actions?")
        if not confirm(question, auto_approve or as_json and auto_approve):
            out.print("\nApply cancelled.")
            return False
    return True


def _print_outcome(result: ApplyResult, destroy: bool, *, wait: bool,
                   specs: str = "") -> None:
    """Each failed change, then the closing line: what happened (runs started, changed,
    destroyed), never "complete" as if the training were done: the backends start runs
    and return."""
    from ftspec.cli.render_plan import summary_counts
    from rich.markup import escape

    out = console()
    add, change, gone = summary_counts({"changes": [
        {"action": c.action.value} for c in result.applied]})
    for address, message in result.failed:
        out.print(f"[red bold]Error:[/red bold] {escape(address)}: {escape(message)}")
    word = "Destroy" if destroy else "Apply"
    if not result.ok:
        out.print(f"\n[red bold]{word} failed[/red bold] ({len(result.failed)} of "
                  f"{len(result.applied) + len(result.failed)} changes did not go through); "
                  "run the same command again once the cause is fixed.")
        return
    if destroy:
        out.print(f"\n[green bold]Destroy complete![/green bold] Resources: {gone} destroyed.")
        return
    out.print(f"\n[green bold]Apply complete:[/green bold] {outcome_text(add, change, gone)}.")
    if add and not wait:
        out.print(f"{_runs(add).capitalize()} go{'es' if add == 1 else ''} on in the "
                  f"background: `ftspec status --watch {escape(specs)}` follows "
                  f"{'it' if add == 1 else 'them'}.")


def _runs(n: int) -> str:
    return f"{'the run' if n == 1 else f'the {n} runs'}"


def outcome_text(started: int, changed: int, destroyed: int) -> str:
    """What an apply did, in runs: "1 run started", "2 runs started, 1 destroyed"."""
    parts = []
    if started:
        parts.append(f"{started} run{'s' if started != 1 else ''} started")
    if changed:
        parts.append(f"{changed} changed in place")
    if destroyed:
        parts.append(f"{destroyed} destroyed")
    return ", ".join(parts) or "nothing changed"


def _follow(applied: _Applied, timeout: float | None, as_json: bool,
            ok_data: dict[str, Any]) -> int:
    """--wait: follow the jobs applied (a saved plan's: those it creates or changes, of the
    specs it was bound to)."""
    desired = applied.desired
    if applied.saved:
        kept = {Path(c.spec_file).resolve() for c in applied.plan.changes
                if c.action is not Action.DELETE and c.spec_file}
        desired = [d for d in desired if Path(d.spec_file).resolve() in kept]
        if not desired:
            return 0  # the plan only destroys: nothing left to follow
    started = {c.address for c in applied.result.applied}
    return _wait(applied.backend, desired, timeout, as_json, ok_data, started)


def _interrupted(desired: list[Desired]) -> None:
    """Ctrl-C while following: only the following stops; say how to go on."""
    from rich.markup import escape

    specs = " ".join(dict.fromkeys(d.spec_file for d in desired))
    out = console(err=True)
    out.print()
    out.print("[yellow bold]Stopped following.[/yellow bold] The run goes on; "
              f"watch it with `ftspec status --watch {escape(specs)}`, "
              f"stop it with `ftspec destroy {escape(specs)}`.")


def _not_saved(exc: StalePlanError) -> BackendError:
    """The live state changed between this apply's own plan and its changes (another apply
    ran meanwhile): not a saved plan's staleness."""
    detail = str(exc).removeprefix("Saved plan is stale: ")
    return BackendError(f"the live state changed between this apply's plan and its changes "
                        f"(another apply ran meanwhile): {detail}. Nothing was changed",
                        hint="run `ftspec apply` again: it plans against the state as it is "
                        "now", retryable=True)


def _before(backend: Any, d: Desired, started: set[str]) -> tuple[Status | None, int | None]:
    """A run of ``d`` this apply did not start: its status when it has already ended (shown,
    not followed: following would replay its old log), else the step it has reached (the
    run is followed from there); (None, None) for a run this apply started."""
    for status in backend.status(d):
        if status.address in started:
            continue
        if status.phase in (Phase.SUCCEEDED, Phase.FAILED):
            return status, None
        return None, int(status.metrics.get("step") or 0)
    return None, None


class _FromNow:
    """A reporter for a run started before this apply: the wait reads its log from the
    start, so the start-up lines and the steps it had already made are not reported again."""

    def __init__(self, inner: ConsoleReporter, step: int) -> None:
        self._inner = inner
        self._step = step
        self._caught_up = step == 0

    def event(self, message: str, **data: Any) -> None:
        if not self._caught_up:
            if data.get("progress") and int(data.get("step") or 0) >= self._step:
                self._caught_up = True
            elif data.get("progress") or data.get("run_phase"):
                return
        self._inner.event(message, **data)

    def close(self) -> None:
        self._inner.close()


def _wait(backend: Any, desired: list[Desired], timeout: float | None, as_json: bool,
          ok_data: dict[str, Any], started: set[str] | None = None) -> int:
    if not desired:
        report_error(BackendError("--wait has no job to follow",
                                  hint="use `ftspec status --watch`"))
        return 1
    from ftspec.cli.sweep_follow import sweep_points

    sweep = sweep_points(desired)
    table = sweep and not as_json and sys.stderr.isatty()
    try:
        statuses, ended = _together(backend, desired, timeout, started) if table else \
            _one_by_one(backend, desired, timeout, as_json, started, named=sweep)
    except BackendError as exc:
        report_error(exc)
        return 1
    except KeyboardInterrupt:
        _interrupted(desired)
        return 130
    from ftspec.cli.render_status import render_status, status_json

    if as_json:
        from ftspec.cli.output import emit_json

        emit_json({**ok_data, "ok": not failed(statuses),
                   "status": [status_json(s) for s in statuses]})
    else:
        out = console()
        for s in statuses:
            if table and s.phase is Phase.SUCCEEDED:
                continue  # its row in the table says it all
            out.print()
            for line in render_status(status_json(s)):
                out.print(line)
        out.print()
        out.print(run_verdict(statuses, ended))
    return 1 if failed(statuses) else 0


def failed(statuses: list[Status]) -> bool:
    return any(s.phase is not Phase.SUCCEEDED for s in statuses)


def _one_by_one(backend: Any, desired: list[Desired], timeout: float | None, as_json: bool,
                started: set[str] | None, *, named: bool) -> tuple[list[Status], set[str]]:
    """Follow each run's log in turn (``named``: each line names its run, for a sweep's
    points); the statuses and the runs that had ended before this apply."""
    from ftspec.cli.sweep_follow import Named

    statuses = []
    ended: set[str] = set()
    for d in desired:
        status, step = _before(backend, d, started) if started is not None else (None, None)
        if status is None:
            reporter = ConsoleReporter(json_events=as_json)
            shown: Any = Named(reporter, d.job.spec_id) if named else reporter
            status = backend.wait(d, shown if step is None else _FromNow(shown, step),
                                  timeout)
            reporter.close()
        else:
            ended.add(status.address)
        statuses.append(status)
    return statuses, ended


def _together(backend: Any, desired: list[Desired], timeout: float | None,
              started: set[str] | None) -> tuple[list[Status], set[str]]:
    """A sweep's points on a terminal: one live table (``sweep_follow``); the statuses and
    the runs that had ended before this apply."""
    from ftspec.cli.sweep_follow import follow_table

    first: list[Status] = []  # the first look: which runs had already ended

    def look() -> list[Status]:
        statuses = [backend.status(d)[0] for d in desired]
        if not first:
            first.extend(statuses)
        return statuses

    statuses = follow_table([d.job.spec_id for d in desired], look, console(err=True),
                            timeout_s=timeout)
    ended = {s.address for s in first if s.phase in (Phase.SUCCEEDED, Phase.FAILED)
             and started is not None and s.address not in started}
    return statuses, ended


def run_verdict(statuses: list[Status], ended: set[str]) -> str:
    """The closing line of `apply --wait`: whether the runs it followed succeeded (``ended``:
    those that had ended before this apply); the exit code says the same (1 when one did
    not)."""
    from rich.markup import escape

    bad = [s for s in statuses if s.phase is not Phase.SUCCEEDED]
    old = " (already finished: this apply started nothing)" if statuses and all(
        s.address in ended for s in statuses) else ""
    if len(statuses) == 1:
        s = statuses[0]
        if not bad:
            return f"[green bold]Run succeeded.[/green bold]{old}"
        how = "failed" if s.phase is Phase.FAILED else \
            f"not finished ({s.phase.value} at the timeout)"
        return f"[red bold]Run {how}[/red bold]{old}: {escape(s.message or s.address)}"
    if not bad:
        return f"[green bold]{len(statuses)} runs succeeded.[/green bold]{old}"
    names = ", ".join(escape(s.address) for s in bad)
    return (f"[red bold]{len(bad)} of {len(statuses)} runs did not succeed[/red bold]{old}: "
            f"{names}")
