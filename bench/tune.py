"""Benchmark: ``ftspec tune`` on this machine's CPU, the tuned tiny run against the written one.

    python bench/tune.py [--rounds 3] [--written-set KEY=VALUE ...] [--example]

In a temporary project (``ftspec quickstart`` writes the tiny model and data there):

1. ``ftspec tune`` of ``examples/tiny-local.yaml`` as shipped, and of the *written* spec:
   the example with the overlay ``written.yaml`` made of ``--written-set`` (default micro
   batch 1 x 4 accumulated, activation checkpointing on: the same global batch of 4, a
   plausibly sub-optimal spec, since the example as shipped is already what tune would
   choose). An overlay, not ``--set``: ``--set`` wins over every ``-f``, so the tuned overlay
   could not change a value given so. Tune probes the CPU peak (or reads its cached probe)
   as a user's ``ftspec tune`` does, and writes the overlay ``tuned.yaml``.
2. Rounds of real runs, each arm once a round and the order alternated between rounds:
   *written* (``-f written.yaml``), *tuned* (``-f written.yaml -f tuned.yaml``: the later
   overlay wins), *checkpointing-only* when tune changed both the batch pair and
   checkpointing (the written batch pair with the tuned checkpointing: the part of the gain
   the model prices) and, with ``--example``, *example* (the shipped spec), each through
   ``ftspec apply --auto-approve --wait`` under its own name, so every run is the compiled
   ``tune run`` command.
3. Per run, from ``ftspec output --json``: the launcher's training time and the dataset's
   tokens per second over it (``measured``), the first and final loss. Printed: each run,
   each arm's median tokens/s, tuned / written (the measured gain) beside tune's predicted
   gain, and the final losses of the arms (written and tuned train the same micro-batches
   in the same order: their losses must agree within the launcher's determinism).

No timing is asserted anywhere: this prints, it does not pass or fail. The machine is
shared: the runs alternate so that a change of load falls on every arm alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FTSPEC = str(Path(sys.executable).with_name("ftspec"))
WRITTEN = ("training.micro_batch_size=1", "training.gradient_accumulation_steps=4",
           "training.gradient_checkpointing=true")


def ftspec(project: Path, *args: str) -> str:
    done = subprocess.run([FTSPEC, *args], cwd=project, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"ftspec {' '.join(args)} failed ({done.returncode}):\n"
                         f"{done.stdout}\n{done.stderr}")
    return done.stdout


def overlay_of(values: tuple[str, ...]) -> dict[str, Any]:
    """``KEY.PATH=VALUE`` pairs (YAML scalars) as a partial spec."""
    doc: dict[str, Any] = {}
    for value in values:
        path, _, text = value.partition("=")
        *parents, leaf = path.split(".")
        where = doc
        for key in parents:
            where = where.setdefault(key, {})
        where[leaf] = yaml.safe_load(text)
    return doc


def tune(project: Path, spec: str, args: list[str], out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ftspec(project, "tune", spec, *args, "-o", str(out),
                                             "--json"))
    return data


def compiled(project: Path, spec: str, args: list[str]) -> str:
    """The launcher's files for ``spec`` with ``args``, less the comment lines."""
    text = ftspec(project, "compile", spec, *args, "--target", "torchtune")
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def run(project: Path, spec: str, name: str, args: list[str]) -> dict[str, Any]:
    """One training run of ``spec`` under ``name``: its measured figures."""
    named = ["--set", f"metadata.name={name}",
             "--set", f"output.uri=file://.ftspec/runs/{name}/output"]
    ftspec(project, "apply", spec, *args, *named, "--auto-approve", "--wait")
    out = json.loads(ftspec(project, "output", spec, *args, *named, "--json"))
    measured, metrics = out.get("measured") or {}, out.get("metrics") or {}
    return {"name": name, "train_s": measured.get("train_runtime_s"),
            "tokens_per_s": measured.get("dataset_tokens_per_second"),
            "first_loss": metrics.get("first_loss"), "final_loss": metrics.get("train_loss"),
            "wall_s": metrics.get("wall_time_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--written-set", action="append", default=None, metavar="KEY=VALUE",
                        help=f"the written spec's overrides (default: {' '.join(WRITTEN)})")
    parser.add_argument("--example", action="store_true",
                        help="add an arm of the example as shipped")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    written_sets = tuple(args.written_set or WRITTEN)
    project = Path(tempfile.mkdtemp(prefix="ftspec-tune-bench-"))
    report: dict[str, Any] = {"written_sets": list(written_sets), "cores": os.cpu_count()}
    try:
        shutil.copy(ROOT / "examples" / "tiny-local.yaml", project / "tiny-local.yaml")
        ftspec(project, "quickstart")
        spec, overlay = "tiny-local.yaml", project / "tuned.yaml"
        shipped = tune(project, spec, [], project / "shipped.tuned.yaml")
        print(f"tune of the example as shipped: tuned={shipped['tuned']}"
              f" (written {shipped['written']['tokens_per_s_per_device']} tokens/s predicted)")
        written = project / "written.yaml"
        written.write_text(yaml.safe_dump(overlay_of(written_sets)))
        tuned = tune(project, spec, ["-f", str(written)], overlay)
        if not tuned["tuned"]:
            raise SystemExit("tune found nothing to change in the written spec: no bench")
        print(f"tune of the written spec ({' '.join(written_sets)}): predicted "
              f"{tuned['written']['tokens_per_s_per_device']} -> "
              f"{tuned['choice']['tokens_per_s_per_device']} tokens/s, "
              f"+{100 * tuned['gain']:.1f}%; CPU peak {tuned['cpu_peak']}")
        print(overlay.read_text())
        report.update(shipped_tune=shipped, tune=tuned, overlay=overlay.read_text())
        arms: dict[str, list[str]] = {"written": ["-f", str(written)],
                                      "tuned": ["-f", str(written), "-f", str(overlay)]}
        if compiled(project, spec, arms["written"]) == compiled(project, spec, arms["tuned"]):
            raise SystemExit("the tuned arm compiles to the written one: nothing to compare")
        choice, was = tuned["choice"], tuned["written"]
        if (choice["micro_batch_size"] != was["micro_batch_size"]
                and choice["gradient_checkpointing"] != was["gradient_checkpointing"]):
            only = project / "checkpointing-only.yaml"
            only.write_text(yaml.safe_dump({"training": {
                "gradient_checkpointing": choice["gradient_checkpointing"]}}))
            arms["checkpointing-only"] = ["-f", str(written), "-f", str(only)]
            predicted = next(
                c["tokens_per_s_per_device"] for c in tuned["candidates"]
                if (c["micro_batch_size"], c["gradient_checkpointing"])
                == (was["micro_batch_size"], choice["gradient_checkpointing"]))
            report["checkpointing_only_predicted_gain"] = (
                predicted / was["tokens_per_s_per_device"] - 1)
        if args.example:
            arms["example"] = []
        runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
        for r in range(args.rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            for arm in order:
                got = run(project, spec, f"tiny-{arm}-r{r + 1}", arms[arm])
                runs[arm].append(got)
                print(f"round {r + 1} {arm}: {got['tokens_per_s']} tokens/s over "
                      f"{got['train_s']} s, loss {got['first_loss']:.4f} -> "
                      f"{got['final_loss']:.6f}", flush=True)
        report["runs"] = runs
        medians = {arm: statistics.median(g["tokens_per_s"] for g in got)
                   for arm, got in runs.items()}
        report["median_tokens_per_s"] = medians
        print("\n| arm | runs tokens/s | median | final losses |")
        print("|---|---|---|---|")
        for arm, got in runs.items():
            speeds = ", ".join(str(g["tokens_per_s"]) for g in got)
            finals = ", ".join(f"{g['final_loss']:.6f}" for g in got)
            print(f"| {arm} | {speeds} | {medians[arm]:.1f} | {finals} |")
        ratio = medians["tuned"] / medians["written"]
        report["measured_ratio"] = ratio
        print(f"\nmeasured tuned / written: {ratio:.3f} (predicted {1 + tuned['gain']:.3f})")
        for arm, median in medians.items():
            if arm not in ("written", "tuned"):
                print(f"measured {arm} / written: {median / medians['written']:.3f}")
        if "checkpointing_only_predicted_gain" in report:
            print("predicted checkpointing-only / written: "
                  f"{1 + report['checkpointing_only_predicted_gain']:.3f}")
        losses = {arm: {g["final_loss"] for g in got} for arm, got in runs.items()}
        gap = max(abs(a - b) for a in losses["tuned"] for b in losses["written"])
        report["final_loss_gap_tuned_written"] = gap
        print(f"largest |final loss tuned - written| over the runs: {gap:.3g}")
        for arm, finals in losses.items():
            if arm not in ("written", "tuned"):
                other = max(abs(a - b) for a in finals for b in losses["written"])
                report[f"final_loss_gap_{arm}_written"] = other
                print(f"largest |final loss {arm} - written|: {other:.3g}")
    finally:
        shutil.rmtree(project, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
