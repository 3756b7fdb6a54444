"""apply / destroy: plan (or load a saved plan), show it, confirm, apply, optionally wait."""

from __future__ import annotations

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
from ftspec.reconciler.model import Action, ApplyResult, Phase, Plan


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
              as_json: bool, destroy: bool, replacing: tuple[str, ...] = ()) -> int:
    applied = _plan_and_apply(specs, plan_file, overlays, sets, kubeconfig=kubeconfig,
                              context=context,
                              namespace=namespace, auto_approve=auto_approve,
                              force_conflicts=force_conflicts, as_json=as_json, destroy=destroy,
                              replacing=replacing)
    if isinstance(applied, int):
        return applied
    result = applied.result
    ok_data = {"applied": [c.address for c in result.applied],
               "failed": [{"address": a, "message": m} for a, m in result.failed]}
    if as_json and not wait:
        from ftspec.cli.output import emit_json

        emit_json({**ok_data, "ok": result.ok})
    if not as_json:
        _print_outcome(result, destroy)
    if not result.ok:
        return 1
    if wait and not destroy:
        return _follow(applied, timeout, as_json, ok_data)
    return 0


def _plan_and_apply(specs: tuple[Path, ...], plan_file: Path | None,
                    overlays: tuple[Path, ...], sets: tuple[str, ...], *, kubeconfig: str | None, context: str | None,
                    namespace: str | None, auto_approve: bool, force_conflicts: bool,
                    as_json: bool, destroy: bool, replacing: tuple[str, ...] = ()
                    ) -> _Applied | int:
    """Plan (or load the saved plan), show it, confirm, apply; the exit code where it stops
    (the error reported)."""
    try:
        backend, plan, desired, saved = _load(specs, plan_file, overlays, sets, kubeconfig,
                                              context, namespace, force_conflicts, destroy,
                                              replacing)
        if not _shown_and_confirmed(plan, saved=saved, destroy=destroy, as_json=as_json,
                                    auto_approve=auto_approve):
            return 1
        result = backend.apply(plan, ConsoleReporter(quiet=as_json))
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
                         auto_approve: bool) -> bool:
    """Print the plan (not with --json) and ask before changing anything, unless the plan
    changes nothing or was saved (approved when it was made); False: the user declined."""
    from ftspec.cli.render_plan import render_plan

    out = console()
    data = plan.to_json()
    if not as_json:
        out.print(render_plan(data, destroy=destroy, saved_to=None) if not saved else
                  render_plan(data, destroy=True))
    if plan.has_changes and not saved:
        question = ("Do you really want to destroy all objects of these specs?" if destroy
                    else "Do you want to perform these actions?")
        if not confirm(question, auto_approve or as_json and auto_approve):
            out.print("\nApply cancelled.")
            return False
    return True


def _print_outcome(result: ApplyResult, destroy: bool) -> None:
    """Each failed change, then the Terraform-style closing line."""
    from ftspec.cli.render_plan import summary_counts
    from rich.markup import escape

    out = console()
    add, change, gone = summary_counts({"changes": [
        {"action": c.action.value} for c in result.applied]})
    for address, message in result.failed:
        out.print(f"[red bold]Error:[/red bold] {escape(address)}: {escape(message)}")
    word = "Destroy" if destroy else "Apply"
    if result.ok:
        tail = f"{gone} destroyed." if destroy else f"{add} added, {change} changed, " \
            f"{gone} destroyed."
        out.print(f"\n[green bold]{word} complete![/green bold] Resources: {tail}")
    else:
        out.print(f"\n[red bold]{word} failed[/red bold] ({len(result.failed)} of "
                  f"{len(result.applied) + len(result.failed)} changes did not go through); "
                  "run the same command again once the cause is fixed.")


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
    return _wait(applied.backend, desired, timeout, as_json, ok_data)


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


def _wait(backend: Any, desired: list[Desired], timeout: float | None, as_json: bool,
          ok_data: dict[str, Any]) -> int:
    if not desired:
        report_error(BackendError("--wait has no job to follow",
                                  hint="use `ftspec status --watch`"))
        return 1
    failed = False
    statuses = []
    try:
        for d in desired:
            reporter = ConsoleReporter(json_events=as_json)
            status = backend.wait(d, reporter, timeout)
            reporter.close()
            statuses.append(status)
            failed |= status.phase is not Phase.SUCCEEDED
    except BackendError as exc:
        report_error(exc)
        return 1
    except KeyboardInterrupt:
        _interrupted(desired)
        return 130
    from ftspec.cli.render_status import render_status, status_json

    if as_json:
        from ftspec.cli.output import emit_json

        emit_json({**ok_data, "ok": not failed, "status": [status_json(s) for s in statuses]})
    else:
        out = console()
        for s in statuses:
            out.print()
            for line in render_status(status_json(s)):
                out.print(line)
    return 1 if failed else 0
