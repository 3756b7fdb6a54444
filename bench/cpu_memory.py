"""Benchmark: ftspec's memory estimate, term by term, against the live tensors of its
compiled jobs on the CPU.

    python bench/cpu_memory.py --work DIR [--cases CASE,...] [--steps 2] [--json OUT.json]
    python bench/cpu_memory.py --table OUT.json   # the recorded runs, priced now

Needs the launchers (``ftspec[accelerate,torchtune]``) and no network or GPU. A case is
``SHAPE:LAUNCHER-METHOD[-gc][-packed]:BATCHxSEQ``, for example
``smollm2-135m:acc-full-gc:2x256``: a shape from ``SHAPES`` (a catalog family's numbers,
``SHAPES`` says which), ``acc`` (TRL's SFTTrainer under accelerate) or ``tt`` (torchtune),
``full`` or ``lora`` (rank 8 on all seven projections), ``gc`` (gradient checkpointing),
``packed`` (``data.packed``, rows about a third of the sequence long), micro batch x
sequence length. ``--cases`` defaults to ``CASES``.

For each shape it writes, under ``--work``, a Llama model with those numbers and random
weights in bf16 (``gpu_memory.write_llama``; the spec gives the same numbers as
``model.architecture`` on the ``llama3_2`` base, so torchtune builds the same model),
ftspec's generated llama3 tokenizer (the model keeps its vocabulary, so the logits have the
real size) and Alpaca rows longer than the sequence (every micro batch is exactly batch x
seq tokens). Each case is one spec (local backend, CPU, bf16 pure, AdamW, clipping at 1.0,
``--steps`` optimizer steps, the second one measured; no checkpoint for TRL): ``ftspec
explain --json`` prices it and ``ftspec apply --auto-approve --wait --json`` runs the compiled command unchanged, with
``bench/live_tensors/`` on ``PYTHONPATH``: its ``sitecustomize`` records the live tensor
bytes of every step phase from torch's dispatcher (see its docstring) and the process's peak
RSS. The cases run one after another (never two at once: the machine is shared).

Measured terms, against the estimate's (``measured_terms``, ``compare``), at the largest
live total of the measured step's forward and backward: weights (the parameters' storages),
optimizer (tensors the optimizer made), gradients (parameter gradients already accumulated),
logits (the loss head's tensors: logits- or tile-shaped, and vocabulary x hidden gradients in
flight), activations (the rest made in the step), other (buffers). The estimate's
``overhead`` (CUDA context, NCCL, the caching allocator's slack) has no counterpart on the CPU
and is left out of the compared total. ``--table`` prices a recorded JSON with the installed
estimator (bench/results/cpu_memory-*.md; tests/compiler/test_memory_cpu.py replays it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_memory

HERE = Path(__file__).resolve().parent
SITE = HERE / "live_tensors"
LIVE_ENV = "FTSPEC_BENCH_LIVE"
VOCAB_ENV = "FTSPEC_BENCH_VOCAB"
SHAPES: dict[str, tuple[str, dict[str, int]]] = {
    "smollm2-135m": ("smollm2-135m", {}),
    "smollm2-360m": ("smollm2-360m", {}),
    "qwen2_5-0.5b": ("qwen2_5-0.5b", {}),
    "llama3_2-1b": ("llama3_2-1b", {}),
    # SmolLM2 135M's layers under Gemma 3's 262144-entry vocabulary: the logits dominate
    "smollm2-135m-v262k": ("smollm2-135m", {"vocab_size": 262144}),
}
"""Shape name: (catalog family whose config.json numbers it takes, numbers replaced).
Qwen2.5's q/k/v biases are left out (Llama layers): 0.1% of its parameters."""
CONTEXT = 8192
"""``max_seq_len`` of the written models (torchtune's rotary table is this long)."""
CASES = (
    "smollm2-135m:acc-full:2x256", "smollm2-135m:tt-full:2x256",
    "smollm2-135m:acc-lora:2x256", "smollm2-135m:tt-lora:2x256",
    "llama3_2-1b:acc-lora:1x128", "llama3_2-1b:tt-lora:1x128",
    "qwen2_5-0.5b:acc-full:1x128", "qwen2_5-0.5b:tt-full:1x128",
    "smollm2-135m-v262k:acc-full:1x256", "smollm2-135m-v262k:tt-full:1x256",
    "smollm2-135m:acc-full-gc:2x256", "smollm2-135m:tt-full-gc:2x256",
    "smollm2-360m:acc-lora-gc:1x512", "smollm2-360m:tt-lora-gc:1x512",
    "smollm2-135m:acc-full-packed:1x512", "smollm2-135m:tt-full-packed:1x512",
)
"""Run in this order (the first ones matter most when a sweep is cut short)."""
TERMS = ("weights", "optimizer", "gradients", "activations", "logits")
"""The estimate's terms that have a measured counterpart (its overhead has none here)."""


def shape_dims(shape: str) -> dict[str, int]:
    """A shape's numbers as ``model.architecture`` spells them."""
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    family, replaced = SHAPES[shape]
    f = MODEL_FAMILIES[family]
    dims = {"num_layers": f.num_layers, "num_heads": f.num_heads,
            "num_kv_heads": f.num_kv_heads, "embed_dim": f.hidden_size,
            "intermediate_dim": f.intermediate_size, "vocab_size": f.vocab_size,
            "max_seq_len": CONTEXT, "head_dim": f.attn_head_dim}
    return {**dims, **replaced}


def parse_case(case: str) -> dict[str, Any]:
    try:
        shape, job, size = case.split(":")
        launcher, method, *flags = job.split("-")
        batch, seq = (int(x) for x in size.split("x"))
    except ValueError:
        raise SystemExit(f"case {case!r}: expected SHAPE:LAUNCHER-METHOD[-FLAG...]:BxS")
    if shape not in SHAPES or launcher not in gpu_memory.LAUNCHERS \
            or method not in ("full", "lora") or set(flags) - {"gc", "packed"}:
        raise SystemExit(f"unknown case {case!r}")
    return {"shape": shape, "launcher": launcher, "method": method, "gc": "gc" in flags,
            "packed": "packed" in flags, "batch": batch, "seq": seq}


def rows_for(batch: int, steps: int) -> int:
    """Rows written for a case: enough for ``steps`` packed or unpacked batches."""
    return 4 * batch * (steps + 1)


def write_assets(work: Path, shape: str, seq: int, rows: int, packed: bool
                 ) -> gpu_memory.Assets:
    """The shape's model (written once per shape), the tokenizer, and the rows: longer than
    ``seq`` tokens, or about a third of it when packed."""
    from ftspec.reconciler.local.tiny import generate_tiny_assets

    tokenizer = work / "tokenizer"
    original = tokenizer / "original"
    if not (original / "tokenizer.json").is_file():
        tok = generate_tiny_assets(work / "tokenizer-src", family="llama3_2")
        assert tok.special_tokens_path is not None
        original.mkdir(parents=True, exist_ok=True)
        shutil.copy(tok.tokenizer_path, original / "tokenizer.model")
        shutil.copy(tok.special_tokens_path, original / "special_tokens.json")
        gpu_memory._write_hf_tokenizer(original)
    model_dir = work / "models" / shape
    if not (model_dir / "model.safetensors").is_file():
        gpu_memory.write_llama(model_dir, shape_dims(shape))
        shutil.copytree(original, model_dir / "original", dirs_exist_ok=True)
    path = work / f"rows-{seq}{'-packed' if packed else ''}.jsonl"
    lengths = gpu_memory._write_rows(path, original, rows, seq // 3 if packed else seq)
    return gpu_memory.Assets(model_dir, path, rows, (min(lengths), max(lengths)))


def case_spec(case: str, assets: gpu_memory.Assets, work: Path, steps: int
              ) -> dict[str, Any]:
    c = parse_case(case)
    original = assets.model_dir / "original"
    method: dict[str, Any] = {"kind": c["method"]}
    if c["method"] == "lora":
        method["lora"] = {"rank": 8, "alpha": 16, "dropout": 0.0,
                          "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
                          "mlp": True}
    name = re.sub(r"[^a-z0-9-]", "-", case.lower())
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": f"cpu-{name}"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "bf16", "precision": "pure",
                  "architecture": {"base": "llama3_2", **shape_dims(c["shape"])},
                  "tokenizer": {"uri": f"file://{original / 'tokenizer.model'}",
                                "special_tokens_uri":
                                    f"file://{original / 'special_tokens.json'}"}},
        "data": {"train": {"uri": f"file://{assets.rows}", "format": "alpaca",
                           "num_examples": assets.num_rows},
                 "max_seq_len": c["seq"], "packed": c["packed"], "shuffle": False},
        "method": method,
        "training": {"epochs": 1, "max_steps": steps,
                     "global_batch_size": c["batch"], "micro_batch_size": c["batch"],
                     "learning_rate": 2e-5 if c["method"] == "full" else 2e-4,
                     "gradient_checkpointing": c["gc"], "max_grad_norm": 1.0,
                     "logging": {"steps": 1}, "seed": 42,
                     "checkpointing": {"strategy": "no"} if c["launcher"] == "acc" else {}},
        "resources": {"gpus_per_node": 0},
        "output": {"uri": f"file://{work / 'out' / name}"},
        "launcher": gpu_memory.LAUNCHERS[c["launcher"]],
        "deploy": {"target": "local"},
    }


# --- measuring -------------------------------------------------------------------------------


def run_case(case: str, work: Path, env: dict[str, str], steps: int, timeout: float
             ) -> dict[str, Any]:
    from ruamel.yaml import YAML

    c = parse_case(case)
    assets = write_assets(work, c["shape"], c["seq"], rows_for(c["batch"], steps), c["packed"])
    spec_path = work / "specs" / f"{case.replace(':', '-')}.yaml"
    spec_path.parent.mkdir(exist_ok=True)
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    with spec_path.open("w") as out:
        yaml.dump(case_spec(case, assets, work, steps), out)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    explained = gpu_memory._ftspec(["explain", str(spec_path), "--json"], work, env, 120)
    if explained.returncode != 0:
        return {"case": case, "error": f"explain exited {explained.returncode}: "
                f"{explained.stderr[-2000:]}"}
    estimate = json.loads(explained.stdout)
    live_file = logs / f"{spec_path.stem}.live"
    for old in logs.glob(f"{live_file.name}.*"):
        old.unlink()
    run_env = {**env, LIVE_ENV: str(live_file),
               VOCAB_ENV: str(shape_dims(c["shape"])["vocab_size"])}
    # a spec applied before is up to date: apply would run nothing
    gpu_memory._ftspec(["destroy", str(spec_path), "--auto-approve"], work, env, 120)
    start = time.perf_counter()
    try:
        applied = gpu_memory._ftspec(["apply", str(spec_path), "--auto-approve", "--wait",
                                      "--json"], work, run_env, timeout)
        code: int | str = applied.returncode
        err = applied.stderr
    except subprocess.TimeoutExpired as e:
        code, err = "timeout", str(e.stderr or "")
        gpu_memory._ftspec(["destroy", str(spec_path), "--auto-approve"], work, env, 120)
    wall = time.perf_counter() - start
    train_log = gpu_memory._train_log(work, spec_path)
    records = [json.loads(f.read_text()) for f in sorted(logs.glob(f"{live_file.name}.*"))
               if not f.name.endswith(".tmp")]
    shutil.rmtree(work / "out", ignore_errors=True)  # checkpoints: disk only
    return {"case": case, **c, "exit": code, "wall_s": round(wall, 1),
            "estimate": estimate["memory"], "derived": estimate["derived"],
            "processes": records,
            "log_tail": None if code == 0 else err[-3000:] + "\n--- train.log ---\n"
            + train_log[-4000:]}


def measured_terms(result: dict[str, Any]) -> dict[str, Any]:
    """The measured counterparts of the estimate's terms, bytes (see the module docstring).

    The peak is the largest live total of any forward or backward phase after the first
    optimizer step (the first forward also loads the model); the optimizer phase's peak is
    reported beside it (on the CPU torch's AdamW steps one parameter at a time, so its
    transients are one parameter's). At that peak: weights = the parameters' storages;
    gradients = the parameters' gradients made so far; optimizer = tensors made by the
    optimizer (its state); logits = the loss head's tensors made in this step (logits- or
    tile-shaped, and the head weight's gradient before it is accumulated); activations =
    the rest made in this step's forward and backward (saved tensors, recomputed layers,
    gradients in flight); other = what remains (buffers such as rotary tables)."""
    proc = next(p for p in result["processes"] if p["steps"])
    steady = [r for r in proc["phases"] if r["step"] >= 1]
    top = max((r for r in steady if r["phase"] in ("forward", "backward")),
              key=lambda r: r["peak"])
    opt = max((r["peak"] for r in steady if r["phase"] == "optimizer"), default=None)
    born, shaped = top["born"], top["born_logits"]

    def plain(phase: str) -> int:
        return int(born.get(phase, 0) - shaped.get(phase, 0))

    head = sum(shaped.get(k, 0) for k in ("forward", "backward", "clip"))
    terms = {"weights": proc["weights"], "gradients": born.get("grad", 0),
             "optimizer": born.get("optimizer", 0), "logits": head,
             "activations": plain("forward") + plain("backward") + plain("clip")}
    terms["other"] = top["peak"] - sum(terms.values())
    return {**terms, "phase": top["phase"], "step": top["step"], "peak": top["peak"],
            "optimizer_phase_peak": opt, "optimizer_state": proc["steps"][-1]
            .get("optimizer_state"), "gradients_at_step": proc["steps"][-1]["gradients"],
            "rss_peak": proc["rss_peak"], "rss_start": proc["rss_start"],
            "logit_ops": proc.get("logit_ops")}


def case_job(report: dict[str, Any], result: dict[str, Any]) -> Any:
    """The ``Job`` the installed ftspec builds for a recorded case (the spec rebuilt as the
    run built it, under a work folder that need not exist: compiling reads no file)."""
    from ftspec.compiler.build import build_job
    from ftspec.spec.validate import spec_from_data

    work = Path("/tmp/ftspec-cpu-bench")
    assets = gpu_memory.Assets(work / "models" / result["shape"], work / "rows.jsonl",
                               rows_for(result["batch"], report["steps"]), (0, 0))
    return build_job(spec_from_data(case_spec(result["case"], assets, work, report["steps"])))


def estimate_now(report: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The installed ftspec's estimate for a recorded case, in ``explain --json``'s terms."""
    memory = case_job(report, result).memory
    return {**{f"{t}_gib": getattr(memory, f"{t}_gib") for t in (*TERMS, "overhead")},
            "total_gib": memory.total_gib}


def compare(result: dict[str, Any], estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    """Estimate against measurement per term and in total (the estimate less its overhead),
    GiB and relative error; ``estimate``: another than the one recorded with the run."""
    est = estimate or result["estimate"]
    m = measured_terms(result)
    gib = float(1 << 30)
    rows = {}
    for term in TERMS:
        e = est[f"{term}_gib"]
        v = m[term] / gib
        rows[term] = {"estimate": e, "measured": round(v, 3),
                      "error": round((e - v) / v, 3) if v > 0.005 else None}
    rows["other"] = {"estimate": 0.0, "measured": round(m["other"] / gib, 3), "error": None}
    total_e = round(est["total_gib"] - est["overhead_gib"], 2)
    total_m = m["peak"] / gib
    rows["total"] = {"estimate": total_e, "measured": round(total_m, 3),
                     "error": round((total_e - total_m) / total_m, 3)}
    return {"terms": rows, "phase": m["phase"], "logit_ops": m["logit_ops"],
            "rss_peak_gib": round(m["rss_peak"] / gib, 2),
            "optimizer_phase_peak_gib": None if m["optimizer_phase_peak"] is None
            else round(m["optimizer_phase_peak"] / gib, 3)}


def table(results: list[dict[str, Any]]) -> str:
    """Markdown: one row per case and term (the comparison each result carries)."""
    lines = ["| case | term | estimate GiB | measured GiB | error |", "|---|---|---|---|---|"]
    for r in results:
        if r.get("exit") != 0 or not r.get("processes"):
            lines.append(f"| {r['case']} | failed: {r.get('exit', r.get('error'))} | | | |")
            continue
        cmp = r["comparison"]
        for term in (*TERMS, "other", "total"):
            row = cmp["terms"][term]
            err = "-" if row["error"] is None else f"{100 * row['error']:+.1f}%"
            label = f"total (peak at {cmp['phase']})" if term == "total" else term
            lines.append(f"| {r['case']} | {label} | {row['estimate']:.3f} | "
                         f"{row['measured']:.3f} | {err} |")
        lines.append(f"| {r['case']} | peak RSS (cross-check) | | {cmp['rss_peak_gib']:.2f} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path, metavar="JSON",
                        help="print a recorded table priced by the installed estimator; run "
                        "nothing")
    args = parser.parse_args()
    if args.table:
        report = json.loads(args.table.read_text())
        done = [r for r in report["results"] if r.get("exit") == 0 and r.get("processes")]
        for r in done:
            r["comparison"] = compare(r, estimate_now(report, r))
        print(table(done))
        return
    if args.work is None:
        parser.error("--work is needed to run cases")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(work / "hf_home"), "TOKENIZERS_PARALLELISM": "false",
           "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(SITE), os.environ.get("PYTHONPATH"))
                                         if p)}
    report: dict[str, Any] = {
        **gpu_memory.environment(), "device": "cpu",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "model": "catalog shapes on Llama layers, random bf16 weights made by transformers",
        "tokenizer": "ftspec's generated llama3 tiktoken (320 ids; the model keeps its "
                     "vocabulary)", "steps": args.steps, "results": []}
    if args.json and args.json.is_file():  # add to a table: cases measured again replace
        old = json.loads(args.json.read_text())
        wanted = set(args.cases.split(","))
        report["results"] = [r for r in old.get("results", []) if r["case"] not in wanted]
    results: list[dict[str, Any]] = report["results"]
    for case in args.cases.split(","):
        result = run_case(case, work, env, args.steps, args.timeout)
        if result.get("exit") == 0 and result.get("processes"):
            result["comparison"] = compare(result)
        results.append(result)
        print(table([result]), flush=True)
        if result.get("log_tail"):
            print(result["log_tail"], flush=True)
        if args.json:  # after every case: a run cut short keeps what it measured
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
