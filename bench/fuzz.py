"""Mutation fuzzing of the examples through ftspec's CLI entry point; prints the outcomes.

    python bench/fuzz.py [--mutants 2000] [--seed 1] [--max-mutations 4] [--time-limit 20]
                         [--cache-mutants 200]
    python bench/fuzz.py --records 500 [--seed 1]

Each mutant (an example changed by 1..N mutators from ``tests/security/fuzzing.py``) goes
through ``ftspec validate``, ``validate --json`` and ``compile --out`` for every target,
in one process; compiled scripts and shell entrypoints then run under ``sh`` with fake
launchers and canary files. Prints mutants, CLI runs and the count per outcome class
(ok, refused, crash, echo, injection, hang) and the first few bad mutants. Exits 1 when
any mutant crashed, echoed the planted credential, ran data as code or hung.

``--cache-mutants N`` then fuzzes the compile cache's entries (``tests/security/
cache_fuzzing.py``): each example compiled with the cache on, every entry damaged or forged,
the commands run again; prints miss / accepted / crash / injection / wrong.

``--records N`` fuzzes local run records instead (``tests/security/fuzz_records.py``): N
mutated ``.ftspec/local`` records naming a bystander process, each through status, plan,
destroy, logs and output; it re-runs itself under ``unshare --pid --fork --mount-proc``
(root) so that a regression can signal only processes of that namespace, and exits 1 when
a command crashed or a record got a process signalled.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from ftspec.targets import TARGET_NAMES

TARGETS = list(TARGET_NAMES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-mutations", type=int, default=4)
    parser.add_argument("--time-limit", type=int, default=20,
                        help="seconds one CLI command may take before it counts as a hang")
    parser.add_argument("--cache-mutants", type=int, default=200,
                        help="cache-entry mutants after the spec mutants (0: none)")
    parser.add_argument("--records", type=int, default=0,
                        help="fuzz N local run records instead of spec files")
    args = parser.parse_args()
    if args.records:
        return records(args.records, args.seed)

    from security.fuzzing import BAD_CLASSES, EXAMPLES, Tally, fresh_root, mutate, run_mutant

    work = Path(tempfile.mkdtemp(prefix="ftspec-fuzz-"))
    os.environ["XDG_STATE_HOME"] = str(work / "state")  # crash logs stay out of $HOME
    os.environ["NO_COLOR"] = "1"
    tally = Tally()
    start = time.perf_counter()
    try:
        for n in range(args.mutants):
            example = EXAMPLES[n % len(EXAMPLES)]
            seed = args.seed * 1_000_003 + n
            root = fresh_root(work)
            count = 1 + seed % args.max_mutations
            text = mutate(example.read_text(), seed, root / "canary", count)
            tally.add(run_mutant(text, root, TARGETS, args.time_limit), text)
            shutil.rmtree(root, ignore_errors=True)
            if (n + 1) % 250 == 0:
                print(f"  {n + 1} mutants, {time.perf_counter() - start:.0f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad = _report("mutants", "CLI runs and script runs", tally, start, ("ok", "refused"),
                  BAD_CLASSES)
    if args.cache_mutants:
        bad = _fuzz_cache(args.cache_mutants, args.seed) or bad
    return 1 if bad else 0


def _fuzz_cache(mutants: int, seed: int) -> bool:
    """Cache-entry mutants; True when any was bad."""
    from security.cache_fuzzing import BAD_CACHE_CLASSES, run_cache_mutant
    from security.fuzzing import EXAMPLES, Tally, fresh_root

    work = Path(tempfile.mkdtemp(prefix="ftspec-cache-fuzz-"))
    tally = Tally()
    start = time.perf_counter()
    try:
        for n in range(mutants):
            root = fresh_root(work)
            outcome = run_cache_mutant(EXAMPLES[n % len(EXAMPLES)], root,
                                       seed * 1_000_003 + n, TARGETS[n % len(TARGETS)])
            tally.add(outcome, EXAMPLES[n % len(EXAMPLES)].name)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _report("cache-entry mutants", "CLI runs", tally, start, ("miss", "accepted"),
                   BAD_CACHE_CLASSES)


def records(count: int, seed: int) -> int:
    """Run-record mutants, inside a private PID namespace (re-executes itself there)."""
    import contextlib
    import subprocess

    if os.environ.get("FTSPEC_FUZZ_PIDNS") != "1" or os.getpid() != 1:
        cmd = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, __file__,
               "--records", str(count), "--seed", str(seed)]
        return subprocess.run(cmd, env={**os.environ, "FTSPEC_FUZZ_PIDNS": "1"},
                              check=False).returncode
    from security.fuzz_records import (
        RECORD_BAD_CLASSES,
        fresh_project,
        mutate_record,
        run_record_mutant,
    )
    from security.fuzzing import Tally
    from security.localstate import bystander

    work = Path(tempfile.mkdtemp(prefix="ftspec-fuzz-records-"))
    os.environ["XDG_STATE_HOME"] = str(work / "state")
    os.environ["NO_COLOR"] = "1"
    victim = bystander()
    tally = Tally()
    start = time.perf_counter()
    try:
        for n in range(count):
            root = fresh_project(work, n)
            os.chdir(root)
            text = mutate_record(victim.pid, victim.create_time(), seed * 1_000_003 + n,
                                 1 + n % 4)
            tally.add(run_record_mutant(text, root, victim.pid), text)
            os.chdir(work)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        with contextlib.suppress(Exception):
            victim.kill()
        shutil.rmtree(work, ignore_errors=True)
    bad = _report("record mutants", "command runs", tally, start, ("ok", "refused"),
                  RECORD_BAD_CLASSES)
    return 1 if bad else 0


def _report(what: str, runs: str, tally: Any, start: float, good: tuple[str, ...],
            bad: tuple[str, ...]) -> bool:
    """Print one fuzz kind's counts and its first bad mutants; True when any was bad."""
    print(f"{what}: {tally.mutants}  {runs}: {tally.runs}  "
          f"time: {time.perf_counter() - start:.0f} s")
    for kind in (*good, *bad):
        print(f"  {kind:<10} {tally.classes.get(kind, 0)}")
    for detail, mutant in tally.bad[:5]:
        print(f"\n--- {detail}\n{mutant[:2000]}")
    return any(tally.classes.get(k) for k in bad)


if __name__ == "__main__":
    raise SystemExit(main())
