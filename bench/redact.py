"""Credential scanning costs what ordinary text of the same size costs: CPU seconds and ratios.

    python bench/redact.py [--size 1048576] [--runs 3]

Three measurements, each the best of ``--runs`` in this process (CPU time,
``time.process_time``), each next to its peer:

1. ``redact`` of 40,000 ``x`` vs ``redact`` of 40,000 characters of ordinary spec text
   (the old scanner took about 30 s of CPU on the first: a lookahead at each position);
2. ``ftspec explain --json`` of a 30 KB spec whose one LoRA module name is 30,000
   characters long (echoed in the summary, so redacted) vs the same spec with an ordinary
   name (the old scanner: about 33 s);
3. ``ftspec validate`` of a ``--size`` spec whose bulk is one long token — one per token
   shape of ``tests/security/long_tokens.py`` — vs the same spec with ordinary text in its
   place (target: ratio <= 2).

Also the growth of ``redact`` from 10,000 to 80,000 characters (linear: about 8x).
Prints one line per case: the CPU seconds of the case and of its peer, and their ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def cli(*args: str) -> Callable[[], object]:
    from ftspec.cli.main import main

    def run() -> object:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(list(args))
    return run


def line(label: str, case: float, peer: float) -> None:
    print(f"{label:<56} {case:9.3f} s {peer:9.3f} s  ratio {case / peer:6.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["FTSPEC_COMPILE_CACHE"] = "off"
    os.environ["NO_COLOR"] = "1"

    from ftspec.spec.secrets import redact
    from security.long_tokens import TINY, TOKEN_UNITS, best_cpu, long_token_spec, ordinary_spec

    print(f"{'case (CPU, best of ' + str(args.runs) + ')':<56} {'case':>11} {'peer':>11}")
    prose = ordinary_spec(40_000)[-40_000:]
    line("redact 40,000 x / 40,000 ordinary", best_cpu(lambda: redact("x" * 40_000), args.runs),
         best_cpu(lambda: redact(prose), args.runs))
    line("redact 80,000 x / 10,000 x (linear: ~8)",
         best_cpu(lambda: redact("x" * 80_000), args.runs),
         best_cpu(lambda: redact("x" * 10_000), args.runs))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = TINY.read_text(encoding="utf-8")
        modules = "target_modules: [q_proj, k_proj, v_proj, o_proj]"
        long_name = folder / "long-module.yaml"
        long_name.write_text(base.replace(modules, modules[:-1] + ", " + "x" * 30_000 + "]"))
        peer_name = folder / "ordinary-module.yaml"
        peer_name.write_text(base.replace(modules, modules[:-1] + ", up_proj]")
                             + "# " + "ordinary comment text " * 1_360 + "\n")
        line("explain --json, 30 KB spec: long / ordinary",
             best_cpu(cli("explain", str(long_name), "--json"), args.runs),
             best_cpu(cli("explain", str(peer_name), "--json"), args.runs))

        ordinary = folder / "ordinary.yaml"
        ordinary.write_text(ordinary_spec(args.size), encoding="utf-8")
        peer = best_cpu(cli("validate", str(ordinary)), args.runs)
        for name, unit in TOKEN_UNITS.items():
            spec = folder / f"token-{name}.yaml"
            spec.write_text(long_token_spec(args.size, unit), encoding="utf-8")
            line(f"validate {args.size:,} B, one token {name!r} / ordinary",
                 best_cpu(cli("validate", str(spec)), args.runs), peer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
