"""Benchmark: `ftspec plan` and `ftspec apply` of many specs against an API server that throttles.

    python bench/kube_load.py [--specs 300] [--inflight 1] [--mutating 1]

Starts its own KubeCluster (tests/harness) with API priority and fairness on and the
server's concurrency cut to ``--inflight`` + ``--mutating`` seats
(``--enable-priority-and-fairness=true --max-requests-inflight=N
--max-mutating-requests-inflight=M``). ftspec runs as the test cluster's ``limited`` user
(cluster admins are exempt from priority and fairness), granted what plan and apply need,
whose requests a FlowSchema sends to a priority level of its own with the least concurrency
and no queue (``limitResponse: Reject``): the server answers 429 with ``Retry-After`` to every
request it cannot admit at once. (With the default queuing levels a client that keeps at
most 8 requests in flight, as ftspec does, is queued, never refused.)

Printed: wall time of one `ftspec plan` over all specs (no objects yet), one `ftspec apply`
(creates every object), and one `ftspec plan` again (must say "no changes": nothing lost);
for each, the 429s the server answered (its ``/metrics``, read as admin before and after) and the retries ftspec made (``FTSPEC_KUBE_STATS``:
the transport's counters); and the TrainJobs that exist at the end (must be all of them).
Not a pass/fail test: ``tests/integration/test_kube_load.py`` is the small version that is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
FTSPEC = [sys.executable, "-m", "ftspec.cli"]
from helpers.kube_load import (
    grant_limited,
    rejected_429,
    throttle_user,
    throttled_flags,
    write_specs,
)

NAMESPACE = "load"


def run_ftspec(args: list[str], env: dict[str, str], stats: Path) -> tuple[int, float, dict[str, int], str]:
    """Exit code, wall seconds, the transport's counters and the output tail."""
    stats.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run([*FTSPEC, *args], env={**env, "FTSPEC_KUBE_STATS": str(stats)},
                          capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    counters: dict[str, int] = {}
    if stats.is_file():
        for line in stats.read_text().splitlines():
            for key, value in json.loads(line).items():
                counters[key] = counters.get(key, 0) + int(value)
    return proc.returncode, took, counters, (proc.stdout + proc.stderr)[-1500:]


def trainjobs(cluster: Any, namespace: str) -> int:
    out = cluster.request("GET", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs")
    return len(out.get("items") or [])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specs", type=int, default=300)
    parser.add_argument("--inflight", type=int, default=1)
    parser.add_argument("--mutating", type=int, default=1)
    args = parser.parse_args()
    from harness.controlplane_build import PINS
    from harness.kube import KubeCluster

    with tempfile.TemporaryDirectory(prefix="ftspec-load-") as tmp, \
            KubeCluster(apiserver_flags=throttled_flags(args.inflight, args.mutating)) as cluster:
        folder = Path(tmp)
        grant_limited(cluster, NAMESPACE)
        throttle_user(cluster)
        specs = [str(p) for p in write_specs(folder, args.specs)]
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_for("limited")),
               "FTSPEC_CACHE_DIR": str(folder / "cache"), "NO_COLOR": "1"}
        env.pop("FTSPEC_KUBE_CONTEXT", None)
        stats = folder / "stats.jsonl"
        rows = []
        for label, cmd, want in (
                ("plan (all new)", ["plan", "-n", NAMESPACE, "--detailed-exitcode", *specs], 2),
                ("apply", ["apply", "-n", NAMESPACE, "--auto-approve", *specs], 0),
                ("plan (nothing lost)", ["plan", "-n", NAMESPACE, "--detailed-exitcode",
                                         *specs], 0)):
            before = rejected_429(cluster)
            code, took, counters, tail = run_ftspec(cmd, env, stats)
            met = rejected_429(cluster) - before
            rows.append((label, code, want, took, met, counters))
            if code != want:
                print(f"{label}: exit {code}, wanted {want}\n{tail}", file=sys.stderr)
        live = trainjobs(cluster, NAMESPACE)
    print(f"{args.specs} specs; kube-apiserver {PINS.kubernetes} with priority and fairness, "
          f"--max-requests-inflight={args.inflight} --max-mutating-requests-inflight={args.mutating}")
    print(f"{'step':<22}{'exit':>6}{'wall s':>9}{'429s (server)':>15}{'429s (ftspec)':>15}"
          f"{'retries':>9}{'requests':>10}")
    for label, code, want, took, met, counters in rows:
        flag = "" if code == want else f" (wanted {want})"
        print(f"{label:<22}{code:>6}{took:>9.1f}{met:>15}{counters.get('throttled', 0):>15}"
              f"{counters.get('retries', 0):>9}{counters.get('requests', 0):>10}{flag}")
    print(f"TrainJobs live at the end: {live} of {args.specs}")
    return 0 if all(code == want for _, code, want, *_ in rows) and live == args.specs else 1


if __name__ == "__main__":
    sys.exit(main())
