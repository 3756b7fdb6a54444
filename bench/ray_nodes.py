"""Benchmark: the tiny quickstart job on a real two-node Ray cluster, world size 2 spread
over two Ray nodes (the multi-node driver) vs the same world size on one Ray node.

    python bench/ray_nodes.py [--runs 2]

Starts its own Ray head and a second raylet joined to it on loopback (tests/harness), writes
the tiny model and data, and runs `ftspec apply --wait` of examples/tiny-local.yaml through
the accelerate launcher in both topologies, alternating run by run so load on a shared
machine affects both alike. Prints the median wall time and the peak summed RSS of the
cluster's process trees (Ray itself included) of each, and the ratios two-node / one-node.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
FTSPEC = str(Path(sys.executable).parent / "ftspec")
COMMON = {"launcher": "accelerate", "model.tokenizer.uri": "null", "method.lora.output": "false",
          "training.global_batch_size": "4", "training.micro_batch_size": "2",
          "training.max_steps": "4", "deploy.target": "ray"}
TOPOLOGIES = {"one node x 2 processes": {"resources.nodes": "1",
                                         "resources.processes_per_node": "2"},
              "two nodes x 1 process": {"resources.nodes": "2"}}


def _sets(values: dict[str, str]) -> list[str]:
    return [x for k, v in values.items() for x in ("--set", f"{k}={v}")]


def _peak_rss(roots: list[int], stop: list[bool], out: list[float]) -> None:
    while not stop:
        total = 0
        for root in roots:
            try:
                proc = psutil.Process(root)
                tree = [proc, *proc.children(recursive=True)]
            except psutil.Error:
                continue
            for p in tree:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
        out.append(total / 2**20)
        time.sleep(0.1)


def run_once(work: Path, env: dict[str, str], sets: list[str], roots: list[int]
             ) -> tuple[float, float]:
    import threading

    stop: list[bool] = []
    samples: list[float] = [0.0]
    sampler = threading.Thread(target=_peak_rss, args=(roots, stop, samples), daemon=True)
    sampler.start()
    start = time.perf_counter()
    done = subprocess.run([FTSPEC, "apply", "examples/tiny-local.yaml", "--auto-approve",
                           "--wait", *sets], cwd=work, env=env, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - start
    stop.append(True)
    sampler.join()
    if done.returncode != 0:
        raise SystemExit(f"apply failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    subprocess.run([FTSPEC, "destroy", "examples/tiny-local.yaml", "--auto-approve", *sets],
                   cwd=work, env=env, capture_output=True, check=False)
    return took, max(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    from ftspec.reconciler.local.tiny import generate_tiny_assets
    from harness.ray_head import RayHead
    from harness.ray_node import RayNode
    from helpers.tinyspec import make_workdir, run_env

    with tempfile.TemporaryDirectory(prefix="ftbench-") as scratch:
        root = Path(scratch)
        assets = generate_tiny_assets(root / "tiny" / "llama2", family="llama2")
        work = make_workdir(root / "work", assets.dataset_path.parent)
        env = run_env(root / "env")
        tiny = (work / ".ftspec/tiny/llama2").resolve()
        with RayHead() as head:
            node = RayNode(head, num_cpus=2, resources={"ftspec-bench-node-b": 1}).start()
            try:
                paths = {"model.uri": f"file://{tiny}/model",
                         "data.train.uri": f"file://{tiny}/dataset.jsonl",
                         "deploy.ray.address": head.address}
                results: dict[str, list[tuple[float, float]]] = {k: [] for k in TOPOLOGIES}
                for i in range(args.runs):
                    for name, topo in TOPOLOGIES.items():
                        out = {"output.uri": f"file://{work}/out-{i}-{len(results[name])}"}
                        sets = _sets({**COMMON, **paths, **topo, **out})
                        results[name].append(run_once(work, env, sets, [head.pid, node.pid]))
            finally:
                node.stop()
    medians = {k: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v))
               for k, v in results.items()}
    for name, (wall, rss) in medians.items():
        print(f"{name:24s} wall {wall:6.1f} s   peak RSS {rss:7.0f} MiB (cluster + run)")
    (w1, m1), (w2, m2) = medians.values()
    print(f"ratio two-node / one-node: wall {w2 / w1:.2f}x, peak RSS {m2 / m1:.2f}x "
          f"(median of {args.runs} runs each)")


if __name__ == "__main__":
    main()
