"""Benchmark: `ftspec plan` and `ftspec apply` of many specs against an API server that throttles.

    python bench/kube_load.py [--specs 300] [--inflight 1] [--mutating 1]

Starts its own KubeCluster (tests/harness) with API priority and fairness on and the
server's concurrency cut to ``--inflight`` + ``--mutating`` seats
(``--enable-priority-and-fairness=true --max-requests-inflight=N
--max-mutating-requests-inflight=M``), so it answers 429 (with ``Retry-After``) to requests
beyond what it admits. ftspec runs as the test cluster's ``limited`` user (cluster admins are
exempt from priority and fairness), granted what plan and apply need.

Printed: wall time of one `ftspec plan` over all specs (no objects yet), one `ftspec apply`
(creates every object), and one `ftspec plan` again (must say "no changes": nothing lost);
for each, the 429s the server answered (``apiserver_request_total{code="429"}`` from its
``/metrics``, read as admin before and after) and the retries ftspec made (``FTSPEC_KUBE_STATS``:
the transport's counters); and the TrainJobs that exist at the end (must be all of them).
Not a pass/fail test: ``tests/integration/test_kube_load.py`` is the small version that is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
FTSPEC = [sys.executable, "-m", "ftspec.cli"]
NAMESPACE = "load"


def throttled_flags(inflight: int, mutating: int) -> list[str]:
    return ["--enable-priority-and-fairness=true", f"--max-requests-inflight={inflight}",
            f"--max-mutating-requests-inflight={mutating}"]


def grant_limited(cluster: Any, namespace: str) -> None:
    """What plan and apply need, for the ``limited`` user (admins skip priority and fairness)."""
    cluster.create_namespace(namespace)
    cluster.request("POST", f"/api/v1/namespaces/{namespace}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"},
        "stringData": {"token": "dummy"}})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    cluster.request("POST", f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "ftspec-load"},
        "rules": [
            {"apiGroups": ["trainer.kubeflow.org", "ray.io", "coordination.k8s.io", ""],
             "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
             "verbs": ["get"]}]})
    cluster.request("POST", f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "ftspec-load"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "ftspec-load"},
        "subjects": [{"kind": "User", "name": "limited", "apiGroup": "rbac.authorization.k8s.io"}]})


def write_specs(folder: Path, count: int, prefix: str = "load") -> list[Path]:
    text = EXAMPLE.read_text(encoding="utf-8")
    name = re.search(r"^  name: (\S+)$", text, re.MULTILINE)
    assert name is not None, "the example names its job under metadata.name"
    out = []
    for i in range(count):
        path = folder / f"{prefix}-{i:03d}.yaml"
        path.write_text(text.replace(f"  name: {name.group(1)}", f"  name: {prefix}-{i:03d}", 1))
        out.append(path)
    return out


def rejected_429(cluster: Any) -> int:
    """``apiserver_request_total`` with code 429, summed over every label set."""
    text = _metrics(cluster)
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'code="429"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _metrics(cluster: Any) -> str:
    import ssl
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(cluster.ca_path))
    req = urllib.request.Request(cluster.server + "/metrics",
                                 headers={"Authorization": f"Bearer {cluster.token('admin')}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return str(resp.read().decode())


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
    from harness.kube import KubeCluster

    with tempfile.TemporaryDirectory(prefix="ftspec-load-") as tmp, \
            KubeCluster(apiserver_flags=throttled_flags(args.inflight, args.mutating)) as cluster:
        folder = Path(tmp)
        grant_limited(cluster, NAMESPACE)
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
    print(f"{args.specs} specs; kube-apiserver 1.20 with priority and fairness, "
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
