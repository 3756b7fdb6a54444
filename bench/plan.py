"""Benchmark: `ftspec plan` vs `kubectl diff --server-side` on the same real API server.

    python bench/plan.py [--runs 7] [--specs 50]

Starts its own KubeCluster (tests/harness), applies N specs so both tools compare against
live objects, then prints median wall times and the ratios: one `ftspec plan SPEC` vs one
`kubectl diff --server-side -f OBJECT` (targets: <= 2 with the compile cache warm, <= 3
with it off), and one `ftspec plan` over the N specs vs one `kubectl diff --server-side -f
DIR` over the same N compiled objects (one process each; target <= 0.5). kubectl is used for the comparison only.

The N specs are taken twice: unchanged since `apply` (ftspec then knows from each object's
recorded digest and managedFields that the server's dry-run would return it unchanged, and
skips it: ``reconciler/kubernetes/drift.unchanged_since_applied``), and each with a new
annotation (every object changed: both tools dry-run every one). A changed object is also
checked against its CRD's CEL rules; the verdict is kept between runs
(``reconciler/kubernetes/cel_verdicts``), so the changed specs are timed twice: planned
again (the verdicts of the first plan kept, as for ``plan`` then ``apply``) and with the
verdicts off (``FTSPEC_CEL_CACHE=off``: cel-python's parser built in every run, as for the
first plan of a change).

Each ftspec figure is taken twice: with the compile cache as a user has it after `apply`
(warm: the specs unchanged since they were compiled; ``ftspec.compiler.cache``) and with
it off (``FTSPEC_COMPILE_CACHE=off``: every spec loaded, validated and compiled anew, as on
a fresh CI runner). The cache lives in a folder of this run's own.

A last row, ``floor``, times the interpreter importing only the libraries such a plan needs
besides ftspec (``FLOOR``) against the same kubectl diff: the least any Python plan costs.

Each ftspec run is followed by the matching kubectl run (alternating), so load on a shared
machine affects both alike. ftspec runs as an installed package does: with Python's
bytecode cache (pip writes .pyc files at install; a PYTHONDONTWRITEBYTECODE=1 in the
caller's environment is dropped, and one warm-up run fills the cache of an editable
install). ``--no-bytecode`` measures without the cache instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
FTSPEC = [sys.executable, "-m", "ftspec.cli"]
FLOOR = ("import click, concurrent.futures, dataclasses, hashlib, http.client, json, ssl, "
         "tempfile, yaml")
"""The floor row: the same interpreter importing only the libraries a warm plan of one spec
imports beside ftspec's own modules (the CLI, threads, the HTTPS client, PyYAML for a YAML
kubeconfig), and doing nothing. No Python plan can take less; its ratio to kubectl is what
the one-spec targets leave for ftspec's own imports and work."""


def _once(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:6])}... exited {proc.returncode}:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return took


def _output(cmd: list[str], env: dict[str, str]) -> str:
    """Run one setup command; its output, or its error shown whole."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])}... exited {proc.returncode}:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


def _alternate(first: Callable[[], float], second: Callable[[], float], runs: int
               ) -> tuple[float, float]:
    """Median of each, the two interleaved run by run."""
    a, b = [], []
    for _ in range(runs):
        a.append(first())
        b.append(second())
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--specs", type=int, default=50)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="run ftspec with PYTHONDONTWRITEBYTECODE=1 (no .pyc cache)")
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is not installed: it is the baseline of this benchmark")
    from harness.kube import KubeCluster

    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"ftspec-bench-{os.getpid()}"
    work.mkdir(parents=True)
    with KubeCluster() as cluster:
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "NO_COLOR": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["FTSPEC_CACHE_DIR"] = str(work / "cache")
        env["FTSPEC_COMPILE_CACHE"] = "on"
        cold_env = {**env, "FTSPEC_COMPILE_CACHE": "off"}
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        cluster.create_namespace("ml")
        cluster.request("POST", "/api/v1/namespaces/ml/secrets", {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"},
            "stringData": {"token": "x"}})
        cluster.request("POST", "/api/v1/namespaces/ml/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "ft-outputs"},
            "spec": {"accessModes": ["ReadWriteMany"],
                     "resources": {"requests": {"storage": "1Gi"}}}})
        text = EXAMPLE.read_text(encoding="utf-8")
        specs, manifests = [], []
        for i in range(args.specs):
            spec = work / f"job{i:02d}.yaml"
            spec.write_text(text.replace("name: llama32-1b-alpaca-lora", f"name: job-{i:02d}"))
            specs.append(str(spec))
        _output([*FTSPEC, "apply", *specs, "--auto-approve"], env)
        # the exact objects ftspec applies, for kubectl (one plan over every spec)
        out = _output([*FTSPEC, "plan", *specs, "--json"], env)
        after = {c["after"]["metadata"]["name"]: c["after"] for c in json.loads(out)["changes"]}
        for i in range(args.specs):
            path = work / f"trainjob{i:02d}.json"
            path.write_text(json.dumps(after[f"job-{i:02d}"]))
            manifests.append(str(path))
        kdiff = [kubectl, "diff", "--server-side", "--field-manager=ftspec", "-f"]
        _once([*FTSPEC, "plan", *specs], env)  # warm-up (bytecode, page and compile caches)
        _once([*kdiff, manifests[0]], env, ok=(0, 1))
        one_ft, one_kc = _alternate(lambda: _once([*FTSPEC, "plan", specs[0]], env),
                                    lambda: _once([*kdiff, manifests[0]], env, ok=(0, 1)),
                                    args.runs)
        one_cold, one_kc2 = _alternate(
            lambda: _once([*FTSPEC, "plan", specs[0]], cold_env),
            lambda: _once([*kdiff, manifests[0]], env, ok=(0, 1)), args.runs)
        floor, floor_kc = _alternate(
            lambda: _once([sys.executable, "-c", FLOOR], env),
            lambda: _once([*kdiff, manifests[0]], env, ok=(0, 1)), args.runs)

        folder = work / "manifests"
        folder.mkdir()
        for m in manifests:
            shutil.copy(m, folder)

        def many_kubectl() -> float:
            """The fair peer: one kubectl process diffing the 50 objects of one folder."""
            return _once([*kdiff, str(folder)], env, ok=(0, 1))

        few = max(3, args.runs // 2)
        many_ft, many_kc = _alternate(lambda: _once([*FTSPEC, "plan", *specs], env),
                                      many_kubectl, few)
        many_cold, many_kc2 = _alternate(lambda: _once([*FTSPEC, "plan", *specs], cold_env),
                                         many_kubectl, few)

        # every spec changed (a new label): every object is dry-run by both tools
        changed, changed_dir, edited = [], work / "changed", work / "edited"
        changed_dir.mkdir()
        edited.mkdir()
        for spec in specs:  # the same file names: a spec's id comes from its file name
            path = edited / Path(spec).name
            path.write_text(Path(spec).read_text(encoding="utf-8").replace(
                "labels: {team: nlp}",
                "labels: {team: nlp}\n  annotations: {edited: 'yes'}"))
            past = time.time() - 10  # edited a while ago: a result read within the same
            os.utime(path, (past, past))  # second is never kept (compiler/cache.py: racy)
            changed.append(str(path))
        out = _output([*FTSPEC, "plan", *changed, "--json"], env)
        for i, change in enumerate(json.loads(out)["changes"]):
            assert change["action"] == "update", change["action"]
            (changed_dir / f"trainjob{i:02d}.json").write_text(json.dumps(change["after"]))
        edit_ft, edit_kc = _alternate(
            lambda: _once([*FTSPEC, "plan", *changed], env),
            lambda: _once([*kdiff, str(changed_dir)], env, ok=(0, 1)), few)
        no_verdicts = {**env, "FTSPEC_CEL_CACHE": "off"}
        fresh_ft, fresh_kc = _alternate(
            lambda: _once([*FTSPEC, "plan", *changed], no_verdicts),
            lambda: _once([*kdiff, str(changed_dir)], env, ok=(0, 1)), few)
    shutil.rmtree(work, ignore_errors=True)
    n = args.specs
    print(f"(ftspec {'without' if args.no_bytecode else 'with'} bytecode cache; "
          f"medians of {args.runs} / {few} alternating runs)")
    rows = [("one spec", "compile cache warm", one_ft, "kubectl diff --server-side", one_kc, 2),
            ("one spec", "compile cache off ", one_cold, "kubectl diff --server-side", one_kc2,
             3),
            (f"{n} specs", "compile cache warm", many_ft, f"kubectl diff -f DIR ({n})", many_kc,
             0.5),
            (f"{n} specs", "compile cache off ", many_cold, f"kubectl diff -f DIR ({n})",
             many_kc2, 0.5),
            (f"{n} specs", "every one changed  ", edit_ft, f"kubectl diff -f DIR ({n})",
             edit_kc, 0.5),
            (f"{n} specs", "changed, CEL fresh ", fresh_ft, f"kubectl diff -f DIR ({n})",
             fresh_kc, 0.5)]
    for what, mode, ft, peer, kc, target in rows:
        print(f"{what:9s} ftspec plan, {mode} {ft * 1000:6.0f} ms | {peer:27s} "
              f"{kc * 1000:5.0f} ms | ratio {ft / kc:5.2f} (target <= {target})")
    print(f"floor     Python importing what a plan needs  {floor * 1000:6.0f} ms | "
          f"{'kubectl diff --server-side':27s} {floor_kc * 1000:5.0f} ms | ratio "
          f"{floor / floor_kc:5.2f} (no ftspec code: the least a one-spec plan costs)")


if __name__ == "__main__":
    main()
