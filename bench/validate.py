"""Cold `ftspec validate` vs `check-jsonschema` on the same files: medians and ratios.

    python bench/validate.py [--runs 15] [--files 200]

Each measurement is a fresh process (cold start included), ftspec and check-jsonschema
alternating so that machine load affects both alike. Two cases: one example, and one
call over N spec files (copies of the examples with distinct names). Target: both
ratios (ftspec / check-jsonschema) <= 1.2.
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

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schemas" / "ftspec.schema.json"
EXAMPLE = ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found; install it (pip install -e '.[dev]')")
    return found


def _time(argv: list[str]) -> float:
    env = dict(os.environ, NO_COLOR="1")
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def _spec_files(folder: Path, count: int) -> list[str]:
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    files = []
    for i in range(count):
        source = examples[i % len(examples)]
        text = source.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        for j, line in enumerate(lines):
            if line.startswith("  name: "):
                name = line.split(":", 1)[1].split("#")[0].strip()
                lines[j] = f"  name: {name[:38]}-{i:03d}\n"
                break
        path = folder / f"spec-{i:03d}-{source.name}"
        path.write_text("".join(lines), encoding="utf-8")
        files.append(str(path))
    return files


def _compare(label: str, files: list[str], runs: int) -> float:
    ftspec = [_tool("ftspec"), "validate", "--quiet", *files]
    peer = [_tool("check-jsonschema"), "--schemafile", str(SCHEMA), *files]
    ours: list[float] = []
    theirs: list[float] = []
    _time(ftspec), _time(peer)  # warm the OS file cache; not counted
    for _ in range(runs):
        ours.append(_time(ftspec))
        theirs.append(_time(peer))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"{label}: ftspec validate {a:.3f}s  check-jsonschema {b:.3f}s  "
          f"ratio {a / b:.2f}  (medians of {runs} alternating runs)")
    return a / b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    one = _compare("1 file   ", [str(EXAMPLE)], args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        many = _compare(f"{args.files} files", _spec_files(Path(tmp), args.files), args.runs)
    print(f"ratios (ftspec / check-jsonschema): 1 file {one:.2f}, {args.files} files "
          f"{many:.2f}; target <= 1.2")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
