"""Benchmark: what content identity costs a plan (``reconciler/inputs.py``).

    python bench/plan_digests.py [--runs 5] [--weights-mib 1024]

A local-backend project like the quickstart's, whose model folder also holds a weights file
of ``--weights-mib`` MiB (random bytes), planned three ways, interleaved run by run so load
on a shared machine affects all alike:

* peer: every input marked ``identity: path`` (what a plan cost before digests: no input
  is read);
* warm: the digests in their cache (the usual plan: each file is only stat'ed);
* cold: the digest cache off (``FTSPEC_DIGEST_CACHE=off``: every input read and hashed, as
  the first plan after a change, or on a fresh CI runner).

Prints the medians, the ratios warm/peer and cold/peer, and the hashing rate of the cold
plan. The compile cache is warm in all three (only the digests differ).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FTSPEC = [sys.executable, "-m", "ftspec.cli"]
PATH_ONLY = ("--set", "model.identity=path", "--set", "model.tokenizer.identity=path",
             "--set", "data.train.identity=path")


def _plan(work: Path, env: dict[str, str], *extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([*FTSPEC, "plan", "tiny-local.yaml", *extra], cwd=work, env=env,
                          capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ftspec plan exited {done.returncode}:\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--weights-mib", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ftspec-bench-digests-") as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        env = {**os.environ, "FTSPEC_CACHE_DIR": str(Path(tmp) / "cache"), "NO_COLOR": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([*FTSPEC, "quickstart"], cwd=work, env=env, check=True,
                       capture_output=True)
        shutil.copy(REPO / "examples" / "tiny-local.yaml", work / "tiny-local.yaml")
        weights = work / ".ftspec/tiny/llama2/model/extra-weights.bin"
        with weights.open("wb") as out:
            for _ in range(args.weights_mib):
                out.write(os.urandom(1 << 20))
        cold_env = {**env, "FTSPEC_DIGEST_CACHE": "off"}
        _plan(work, env)  # warm-up: bytecode, compile cache, digest cache
        peer, warm, cold = [], [], []
        for _ in range(args.runs):
            peer.append(_plan(work, env, *PATH_ONLY))
            warm.append(_plan(work, env))
            cold.append(_plan(work, cold_env))
    p, w, c = (statistics.median(x) for x in (peer, warm, cold))
    size = args.weights_mib + 1  # plus the tiny model, tokenizer and dataset (under 1 MiB)
    print(f"(medians of {args.runs} interleaved runs; inputs about {size} MiB)")
    print(f"peer  identity: path       {p * 1000:7.0f} ms")
    print(f"warm  digest cache         {w * 1000:7.0f} ms | ratio {w / p:5.2f} vs peer")
    print(f"cold  every input hashed   {c * 1000:7.0f} ms | ratio {c / p:5.2f} vs peer | "
          f"{size / max(c - p, 1e-9):6.0f} MiB/s hashed")


if __name__ == "__main__":
    main()
