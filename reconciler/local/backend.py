"""The local backend (``deploy.target: local``): the launcher's command as a process here.

One resource per spec (per point of a sweep: its id has the point's label),
``local.run.<spec-id>``. ``plan`` compares what would run (the
program, its arguments, the environment ftspec adds and the launcher's files, as
``reconciler.local.compare`` normalises them) with what the recorded run was started
with: no record -> create; the same run -> no-op (running or succeeded) or replace when
the last run failed (like a tainted resource in Terraform); another run -> replace, which
stops an active run first. No hash of the spec (which moves with every new default) takes
part, so a new ftspec that compiles the same run plans "No changes"; where it compiles a
different one, the change says so (``Change.upgrade``). Runs of a spec file that no longer
produces them (renamed ``metadata.id``, a point no longer in ``sweep.grid``) are deleted;
``destroy`` deletes them with the spec's own. Never two runs of one spec.

Identity is ``metadata.name`` (``reconciler.identity``): a run recorded from a renamed spec
file, or under the file-name id an earlier ftspec gave it, is planned as a move (the same
run, "No changes" when nothing else differs); apply writes its record under the new id and
spec file and leaves the process and its run folder alone (``RunRecord.run_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from ftspec.compiler.pipeline import CompileOptions
from ftspec.reconciler.applied import decode, encode, record_of
from ftspec.reconciler.backend import (
    Backend,
    BackendError,
    Desired,
    KeepsHistory,
    Measurer,
    Preflighter,
    Reporter,
    StaleWords,
    SweepPlace,
)
from ftspec.reconciler.driver_logs import one_log, refuse_selector
from ftspec.reconciler.identity import DuplicateIdentity, Moved, duplicate_error, file_move, moved
from ftspec.reconciler.local import generations, runner
from ftspec.reconciler.local.capacity import Machine, default_parallel
from ftspec.reconciler.local.compare import observational, run_changes
from ftspec.reconciler.local.datascan import locate
from ftspec.reconciler.local.launch import LAUNCH_DIR, compiled_files, prepare
from ftspec.reconciler.local.measure_run import measured
from ftspec.reconciler.local.observe import RunView, observe
from ftspec.reconciler.local.preflight import preflight
from ftspec.reconciler.local.record import LOG_NAME, RunRecord
from ftspec.reconciler.local.resume_check import moved_by_apply
from ftspec.reconciler.local.state import StateStore
from ftspec.reconciler.logread import LogFollower
from ftspec.reconciler.model import (
    Action,
    ApplyResult,
    Change,
    Phase,
    Plan,
    Planned,
    Reads,
    Replacing,
    Status,
    Summaries,
    Upgrading,
)
from ftspec.reconciler.outputs import location, scan
from ftspec.reconciler.progress import tracker_for, tracker_settings
from ftspec.reconciler.waiting import Observed, wait_until_done
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job

PREFIX = "local.run."
TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)

def address(spec_id: str) -> str:
    return PREFIX + spec_id


def _spec_file(path: str, root: Path) -> str:
    full = (root / path).resolve()
    try:
        return str(full.relative_to(root))
    except ValueError:
        return str(full)


def _in_run_dir(after: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """``after`` as it would run from ``run_dir`` (a moved run keeps its folder): the run
    folder, its log and the launch files' paths in the command and environment."""
    new = str(after["run_dir"])
    if new == run_dir:
        return after
    old_launch, new_launch = f"{run_dir}/{LAUNCH_DIR}", f"{new}/{LAUNCH_DIR}"

    def moved(value: Any) -> Any:
        return value.replace(new_launch, old_launch) if isinstance(value, str) else value

    return {**after, "run_dir": run_dir, "log": f"{run_dir}/{LOG_NAME}",
            "argv": [moved(v) for v in after["argv"]],
            "env": {k: moved(v) for k, v in (after.get("env") or {}).items()}}


def _before(view: RunView) -> dict[str, Any]:
    r = view.record
    return {"spec_id": r.spec_id, "spec_file": r.spec_file, "argv": r.argv,
            "phase": view.phase.value, "pid": r.supervisor_pid,
            "exit_code": view.returncode}


def _positions(plan: Plan) -> dict[str, int]:
    """Each sweep point's position in its queue: its place among the plan's runs of its
    sweep (the plan lists a sweep's points in grid order)."""
    out: dict[str, int] = {}
    seen: dict[str, int] = {}
    for change in plan.changes:
        queue = (change.after or {}).get("queue")
        if isinstance(queue, dict):
            sweep = str(queue.get("sweep"))
            out[change.address] = seen.get(sweep, 0)
            seen[sweep] = out[change.address] + 1
    return out


class LocalBackend:
    name = "local"
    stale_words = StaleWords("the run of {address}", created="was recorded",
                             changed="was replaced")

    def __init__(self, root: Path | None = None, *, stop_grace_s: float = 10.0,
                 check_data: bool = False) -> None:
        self.store = StateStore(root or Path.cwd())
        self.root = self.store.root
        self.stop_grace_s = stop_grace_s
        self.check_data = check_data
        """``plan --check-data``: preflight reads every row of the local datasets."""
        self._machine: Machine | None = None

    def compile_options(self, jobs: Sequence[Job], base: CompileOptions) -> CompileOptions:
        return base

    def preflight(self, desired: Desired) -> list[Diagnostic]:
        found: list[Diagnostic] = list(preflight(desired, self.root,
                                                 check_data=self.check_data))
        record = self.store.read(desired.job.spec_id)
        if record is not None:
            try:
                file_move(desired.job, desired.spec_file, record.spec_file, self.root)
            except DuplicateIdentity as exc:
                found.append(duplicate_error(desired, exc.other_file))
            found += moved_by_apply(desired, record.run_dir, self.store)
        return found

    # ------------------------------------------------------------------ plan

    def _after(self, d: Desired) -> dict[str, Any]:
        launch = prepare(d)
        queue = {} if d.sweep is None else {"queue": self._queue(d, d.sweep)}
        return {"spec_id": d.job.spec_id,
                "spec_file": _spec_file(d.spec_file, self.root), "launcher": d.job.launcher,
                "summary": d.job.summary, "applied": encode(record_of(d.job, d.inputs)),
                "name": d.job.name,
                **launch.to_json(), **queue}

    def _queue(self, d: Desired, place: SweepPlace) -> dict[str, Any]:
        """The point's sweep queue (``slots.py``): at most ``sweep.max_parallel`` points run
        at once, else what this machine holds (``capacity.py``). Not compared by plan: a new
        limit does not retrain a point. The point's position is its place in the plan
        (``_positions``: grid order), so the plan's runs differ in nothing but their point."""
        if place.max_parallel is not None:
            limit, why = place.max_parallel, "sweep.max_parallel"
        else:
            if self._machine is None:
                self._machine = Machine.here()
            fit = default_parallel(d.job, place.size, self._machine)
            limit, why = fit.limit, f"default: what this machine holds ({fit.why})"
        return {"sweep": place.sweep_id, "max_parallel": limit, "why": why,
                "size": place.size}

    def _earlier(self, d: Desired, after: dict[str, Any], taken: set[str]
                 ) -> tuple[RunRecord, Moved] | None:
        """A run recorded under an id an earlier ftspec gave this job (``identity.moved``):
        of this spec file, or of a renamed one that runs the same."""
        for record in self.store.all():
            if record.spec_id in taken or record.name:
                continue  # a record that names its job is that job's (a rename = a new job)
            move = moved(d.job, d.spec_file, record.spec_id, record.spec_file, self.root)
            if move is None:
                continue
            if move.upgrade or not run_changes(record, _in_run_dir(after, record.run_dir),
                                            self._old_files(record)):
                return record, move
        return None

    def _keeps(self, record: RunRecord, job: Job) -> str:
        """What a replace keeps of ``record``'s run (``generations.plan_note``)."""
        return generations.plan_note(self.store, record.run_dir, record.spec_id,
                                     str(location(job)["path"]))

    def _old_files(self, record: RunRecord) -> Callable[[str], str | None]:
        return lambda name: runner.launch_file(self.root, record.run_dir, name)

    def _change(self, d: Desired, taken: set[str]) -> Change:
        job = d.job
        after = self._after(d)
        addr = address(job.spec_id)
        record = self.store.read(job.spec_id)
        moved_from = why = None
        if record is None:
            earlier = self._earlier(d, after, taken)
            if earlier is None:
                return Change(addr, Action.CREATE, None, after, reason="no run recorded",
                              spec_file=d.spec_file)
            record, move = earlier
            moved_from, why = address(record.spec_id), move.why
        else:
            try:
                why = file_move(job, d.spec_file, record.spec_file, self.root)
            except DuplicateIdentity as exc:
                raise BackendError(duplicate_error(d, exc.other_file).format()) from None
            moved_from = addr if why else None
        view = observe(record, self.root)
        before = _before(view)
        fields = run_changes(record, _in_run_dir(after, record.run_dir),
                             self._old_files(record))
        applied = decode(record.applied)
        reads = Reads(applied.inputs if applied else None, d.inputs)

        @cache
        def keeps() -> str:
            """What a replace keeps of the run (read once, and only where it is said)."""
            return self._keeps(record, job)

        def replacing() -> Replacing:
            """The replace of the run: planned where what would run changed, asked by the
            engine where only the inputs' content did (what it keeps is read only then)."""
            then = f"; the active run (pid {record.supervisor_pid}) is stopped first" \
                if view.active else ""
            return Replacing(Planned(
                addr, Action.REPLACE, before, after,
                reason=then + "; " + keeps(), fields=tuple(fields),
                spec_file=d.spec_file, moved_from=moved_from, moved=why,
                summaries=Summaries(applied.summary if applied and applied.summary
                                    else record.summary, after["summary"]),
                upgrading=Upgrading(applied, job, legacy=not record.applied)
                if fields else None),
                f"what would run changed ({', '.join(f.path for f in fields)})"
                if fields else None)

        if fields and view.phase is not Phase.FAILED and all(observational(f) for f in fields):
            what = "is running" if view.active else "finished"
            return Planned(addr, Action.NOOP, before, _in_run_dir(after, record.run_dir),
                           fields=tuple(fields), spec_file=d.spec_file, moved_from=moved_from,
                           moved=why, reads=reads, replacing=replacing, reason=(
                               f"only how the run logs changed "
                               f"({', '.join(f.path for f in fields)}): it trains the same, so "
                               f"the run that {what} is kept; `ftspec apply --replace {addr}` "
                               "runs it again"))
        if not fields:
            if view.phase is Phase.FAILED:
                return Planned(addr, Action.REPLACE, before, after, spec_file=d.spec_file,
                               reason=f"the last run {view.message}; apply runs it again; "
                               + keeps(), drift=not view.stop_requested,
                               moved_from=moved_from, moved=why, reads=reads,
                               replacing=replacing)
            what = "is running" if view.active else "already succeeded"
            return Planned(addr, Action.NOOP, before, _in_run_dir(after, record.run_dir),
                           spec_file=d.spec_file, moved_from=moved_from, moved=why,
                           reason=f"the run of this spec {what} (pid {record.supervisor_pid})",
                           reads=reads, replacing=replacing)
        how = replacing()
        return replace(how.change, reason=(how.why or "") + (how.change.reason or ""),
                       reads=reads, replacing=lambda: how)

    def plan(self, desired: Sequence[Desired]) -> Plan:
        taken = {d.job.spec_id for d in desired}
        changes = []
        for d in desired:
            change = self._change(d, taken)
            if change.moved_from:
                taken.add(change.moved_from[len(PREFIX):])
            changes.append(change)
        swept = {_spec_file(d.spec_file, self.root) for d in desired if d.job.point}
        for record in self._strays(desired, taken):
            view = observe(record, self.root)
            why = ("not a point of its sweep.grid now" if record.spec_file in swept
                   else "spec id renamed")
            changes.append(Change(
                address(record.spec_id), Action.DELETE, _before(view), None,
                reason=f"{record.spec_file} no longer produces it ({why}); "
                + ("the active run is stopped" if view.active else "the run ended"),
                spec_file=record.spec_file))
        return self._plan(changes, desired)

    def _strays(self, desired: Sequence[Desired], taken: set[str]) -> Iterator[RunRecord]:
        """Runs of the desired spec files that no desired job is (``taken``: the desired ids
        and the ids their moves came from): points that left a sweep's grid, a spec's run
        from before its id was renamed."""
        files = {_spec_file(d.spec_file, self.root) for d in desired}
        return (r for r in self.store.all() if r.spec_id not in taken and r.spec_file in files)

    def plan_destroy(self, desired: Sequence[Desired]) -> Plan:
        records: list[tuple[str, str, RunRecord | None]] = \
            [(d.spec_file, d.job.spec_id, self._record(d)) for d in desired]
        taken = {d.job.spec_id for d in desired} | {r.spec_id for _, _, r in records if r}
        records += [(r.spec_file, r.spec_id, r)  # every point of a sweep
                    for r in self._strays(desired, taken)]
        changes = []
        for spec_file, job_id, record in records:
            if record is None:
                continue
            view = observe(record, self.root)
            how = "stops the active run and forgets it" if view.active else "forgets the run"
            how += "; " + generations.plan_note(self.store, record.run_dir, record.spec_id,
                                                None)
            old = address(record.spec_id)
            changes.append(Change(address(job_id), Action.DELETE, _before(view), None,
                                  reason=how, spec_file=spec_file,
                                  moved_from=old if record.spec_id != job_id else None))
        return self._plan(changes, desired)

    def _plan(self, changes: list[Change], desired: Sequence[Desired]) -> Plan:
        addresses = [a for c in changes for a in (c.address, c.moved_from) if a]
        return Plan(backend=self.name, changes=tuple(changes),
                    read_digests=self._digests(addresses),
                    specs={d.spec_file: d.job.written for d in desired})

    def read_digests(self, plan: Plan) -> dict[str, str]:
        return self._digests(plan.read_digests)

    def _digests(self, addresses: Iterable[str]) -> dict[str, str]:
        """What a plan remembers of each address's run record (``StateStore.digest``)."""
        return {a: self.store.digest(a[len(PREFIX):]) for a in addresses}

    # ------------------------------------------------------------------ apply

    @contextmanager
    def holding(self, plan: Plan, reporter: Reporter) -> Iterator[str]:
        """The state lock; the note names the other ftspec that held it meanwhile."""

        def waiting(holder: str) -> None:
            reporter.event(f"waiting for the local state lock, held by {holder}")

        with self.store.lock(on_wait=waiting) as waited_for:
            yield (", by another ftspec that held the state lock meanwhile: " + waited_for
                   if waited_for else "")

    def act(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        applied: list[Change] = []
        failed: list[tuple[str, str]] = []
        positions = _positions(plan)
        for change in plan.changes:
            if change.address in positions and change.after is not None:
                change = replace(change, after={**change.after, "queue": {
                    **change.after["queue"], "position": positions[change.address]}})
            try:
                record = self.store.read((change.moved_from or change.address)[len(PREFIX):])
                if record is not None:  # finish what a killed apply left
                    runner.settle(self.store, record)
                if change.action is Action.NOOP and not change.moved_from:
                    continue
                self._apply_one(change, reporter)
                applied.append(change)
            except BackendError as exc:
                failed.append((change.address, str(exc)))
        return ApplyResult(tuple(applied), tuple(failed))

    def _apply_one(self, change: Change, reporter: Reporter) -> None:
        spec_id = change.address[len(PREFIX):]
        old_id = (change.moved_from or change.address)[len(PREFIX):]
        record = self.store.read(old_id)
        if change.action is Action.NOOP:  # a move: the same run, recorded under its identity
            if record is not None and change.after is not None:
                self._move(record, change.after)
                reporter.event(f"{change.address}: {change.moved} (recorded again; the run "
                               "goes on unchanged)")
            return
        if change.action in (Action.DELETE, Action.REPLACE) and record is not None:
            runner.stop(self.root, record, reporter, self.stop_grace_s)
            kept = generations.keep(self.store, observe(record, self.root))
            if kept is not None:
                reporter.event(f"{change.address}: the previous run is kept in {kept} "
                               "(`ftspec output SPEC --history`)")
            if change.action is Action.DELETE:
                self.store.remove(old_id)
                reporter.event(f"{change.address}: destroyed")
                return
            if old_id != spec_id:
                self.store.remove(old_id)
        if change.action in (Action.CREATE, Action.REPLACE):
            assert change.after is not None
            for note in change.after.get("notes", []):
                reporter.event(note)
            new = runner.start(self.store, change.after, reporter)
            how = "queued" if "queue" in change.after and observe(
                new, self.root).phase is Phase.PENDING else "running"
            reporter.event(f"{change.address}: {change.action.value}d, {how}",
                           pid=new.supervisor_pid)

    def _move(self, record: RunRecord, after: dict[str, Any]) -> None:
        """``record`` written again under ``after``'s id and spec file (its run folder
        kept), then the record under the old id removed: no process is touched."""
        run_id = PurePosixPath(record.run_dir).name
        self.store.write(replace(
            record, spec_id=after["spec_id"], spec_file=after["spec_file"],
            applied=str(after.get("applied") or record.applied),
            run_id="" if run_id == after["spec_id"] else run_id,
            name=str(after.get("name") or record.name)))
        if record.spec_id != after["spec_id"]:
            self.store.remove(record.spec_id)

    # ------------------------------------------------------------------ observe

    def _record(self, desired: Desired) -> RunRecord | None:
        """The run of this job: under its id, else under the id an earlier ftspec gave it
        in this spec file (until the next apply records it under the new one)."""
        record = self.store.read(desired.job.spec_id)
        if record is not None:
            return record
        for other in self.store.all():
            if other.name:
                continue
            move = moved(desired.job, desired.spec_file, other.spec_id, other.spec_file,
                         self.root)
            if move is not None and move.upgrade:
                return other
        return None

    def _view(self, desired: Desired) -> RunView | None:
        """The recorded run; a failed one's known data error located at its dataset row
        (``datascan.locate``, read from the spec's datasets as they are now)."""
        record = self._record(desired)
        if record is None:
            return None
        view = observe(record, self.root, settings=tracker_settings(desired.job))
        if view.phase is Phase.FAILED and view.reason:
            data = locate(view.reason, desired.job, self.root)
            if data is not None:
                view = replace(view, reason={**view.reason, "data": data})
        return view

    def status(self, desired: Desired) -> list[Status]:
        addr = address(desired.job.spec_id)
        view = self._view(desired)
        if view is None:
            return [Status(addr, Phase.UNKNOWN, "not applied: no local run recorded for this "
                           "spec (run `ftspec apply`)", platform={"exists": False})]
        message = view.message
        return [Status(addr, view.phase, message, platform={"exists": True, **view.platform()},
                       metrics=view.metrics(),
                       outputs=self._outputs(desired, view.record.started_at),
                       reason=view.reason)]

    def history(self, desired: Desired) -> list[dict[str, Any]]:
        """The runs of this job a replace or destroy kept (``generations``)."""
        return generations.history(self.store, desired.job.spec_id)

    def measured(self, desired: Desired, reporter: Reporter | None = None) -> dict[str, Any]:
        """The ended run's measured properties (``local/measure_run.py``; kept with it)."""
        view = self._view(desired)
        if view is None:
            return {}
        return measured(desired.job, view, self.root, lambda: compiled_files(desired),
                        reporter)

    def _outputs(self, desired: Desired, since: float) -> dict[str, Any]:
        where = location(desired.job)
        folder = Path(where["path"])
        return {**where, **scan(folder if folder.is_absolute() else self.root / folder,
                                base=self.root, since=since)}

    def wait(self, desired: Desired, reporter: Reporter, timeout_s: float | None = None
             ) -> Status:
        record = self._record(desired)
        if record is None:
            raise BackendError(f"no local run recorded for {desired.spec_file}",
                               hint="run `ftspec apply` first")
        follower = LogFollower(self.root / record.log)

        def look() -> Observed:
            lines = follower.read_new()
            view = observe(record, self.root)
            return Observed(view.phase, lines, elapsed_s=view.metrics().get("elapsed_s"))

        return wait_until_done(look, lambda: self.status(desired)[0],
                               tracker=tracker_for(desired.job), reporter=reporter,
                               address=address(desired.job.spec_id), timeout_s=timeout_s,
                               poll_s=0.25)

    def logs(self, desired: Desired, *, follow: bool = False, tail: int | None = None,
             selector: str | None = None) -> Iterator[str]:
        refuse_selector(selector, "a local job")
        record = self._record(desired)
        if record is None:
            raise BackendError(f"no local run recorded for {desired.spec_file}",
                               hint="run `ftspec apply` first")
        yield from one_log(LogFollower(self.root / record.log),
                           lambda: not observe(record, self.root).active,
                           follow=follow, tail=tail, pause_s=0.25)


def make_backend(options: object = None) -> LocalBackend:
    """Factory used by ``ftspec.reconciler.backends``: state in the working directory (the
    project root: the CLI runs there, ``ftspec.cli.project``)."""
    return LocalBackend(Path.cwd(), check_data=bool(getattr(options, "check_data", False)))

CHECKED: tuple[type[Backend], type[Preflighter], type[KeepsHistory], type[Measurer]] = (
    LocalBackend, LocalBackend, LocalBackend, LocalBackend)
"""The Backend protocol and the capabilities LocalBackend offers
(``reconciler.backend.CAPABILITIES``), checked by mypy --strict here."""
