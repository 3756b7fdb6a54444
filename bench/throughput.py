"""Benchmark: the throughput model's predicted tokens/s against measured ones, per case.

    python bench/throughput.py [--cpu-steps 2] [--no-cpu] [--json OUT.json]
    python bench/throughput.py --cpu-from bench/results/throughput-2026-11-28.json

Two sets of cases:

- **H100** (recorded): the runs of ``bench/results/gpu_memory-h100-*.json`` (Llama 3.2 1B's
  shapes, one H100, 4 x 2048 tokens a step), each rebuilt as ``bench/gpu_memory.py`` built
  its spec, priced with the catalog's H100 peak. Printed: the efficiency each run reached,
  the fit per launcher family (what ``compiler/throughput_fit.py`` keeps) and each run
  predicted leave-one-out (with the efficiency fitted on the other runs of its family).
- **CPU** (measured live, on this machine): before each case the peak is measured, a
  matmul probe (best GFLOP/s of square fp32 matmuls) and a copy probe (GB/s), the probe
  ``ftspec tune`` takes (``compiler/cpu_peak.py``); then the case trains a
  Llama with SmolLM2 135M's shapes and random weights for ``--cpu-steps`` steps in a plain
  torch loop (transformers' model, PEFT's LoRA, AdamW: the path TRL's trainer runs), timed
  after one warm-up step. The model predicts each case from its compiled spec (accelerate
  launcher, fp32, CPU) on the probed peak, with a CPU efficiency fitted on the other CPU
  cases (leave-one-out). The fit of the recorded runs is kept as
  ``compiler/throughput_fit.CPU_EFFICIENCY`` (what ``tune`` prices a CPU spec at).

No timing is asserted anywhere: this prints, it does not pass or fail. The machine is
shared: run it when it is quiet (``nice`` does not help a timing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CPU_SHAPE = "smollm2-135m"
CPU_CASES = ("full:1x128", "lora:1x128", "full-gc:1x128", "lora-gc:1x128", "full:2x128")
"""``METHOD[-gc]:BATCHxSEQ``."""


def h100_runs() -> list[Any]:
    """The recorded H100 runs as the fit takes them."""
    import gpu_memory
    from ftspec.compiler.build import build_job
    from ftspec.compiler.throughput import hardware_of
    from ftspec.compiler.throughput_fit import measured_run
    from ftspec.spec.validate import spec_from_data

    runs = []
    for path in sorted((HERE / "results").glob("gpu_memory-h100-*.json")):
        report = json.loads(path.read_text())
        work = Path("/tmp/ftspec-gpu-bench")
        assets = gpu_memory.Assets(work / "model", work / "rows.jsonl", report["rows"],
                                   tuple(report["row_tokens"]))
        for result in report["results"]:
            if result.get("exit") != 0 or not result.get("tokens_per_s"):
                continue
            data = gpu_memory.case_spec(result["case"], assets, work, tiny=False,
                                        batch=report["batch"], seq=report["seq"],
                                        **gpu_memory.report_options(report))
            job = build_job(spec_from_data(data))
            hardware = hardware_of(job)
            assert hardware is not None, result["case"]
            runs.append(measured_run(result["case"], job, hardware, result["tokens_per_s"]))
    return runs


def cpu_job(case: str) -> Any:
    """The compiled spec of a CPU case (accelerate launcher, fp32, CPU)."""
    from ftspec.compiler.build import build_job
    from ftspec.spec.validate import spec_from_data

    method, shape = case.split(":")
    batch, seq = (int(x) for x in shape.split("x"))
    kind = method.removesuffix("-gc")
    data: dict[str, Any] = {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "cpu-" + case.replace(":", "-")},
        "model": {"uri": "hf://HuggingFaceTB/SmolLM2-135M", "family": CPU_SHAPE,
                  "dtype": "fp32"},
        "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "num_examples": 1000},
                 "max_seq_len": seq},
        "method": {"kind": "full"} if kind == "full" else {
            "kind": "lora", "lora": {"rank": 8, "alpha": 16, "target_modules": [
                "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                "down_proj"]}},
        "training": {"global_batch_size": batch, "micro_batch_size": batch,
                     "learning_rate": 1e-4, "max_steps": 10,
                     "gradient_checkpointing": method.endswith("-gc")},
        "resources": {"gpus_per_node": 0},
        "launcher": "accelerate",
        "deploy": {"target": "local"},
    }
    return build_job(spec_from_data(data))


def train_cpu(job: Any, steps: int) -> float:
    """Measured tokens/s of ``job``'s step in a plain torch loop (one warm-up step)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    m = job.model
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=m.hidden_size, num_hidden_layers=m.num_layers,
                         num_attention_heads=m.num_heads, num_key_value_heads=m.num_kv_heads,
                         intermediate_size=m.intermediate_size, vocab_size=m.vocab_size,
                         tie_word_embeddings=m.tied_embeddings,
                         max_position_embeddings=max(job.max_seq_len, 512))
    model: Any = LlamaForCausalLM(config)
    if job.spec.training.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if job.lora_modules:
        from peft import LoraConfig, get_peft_model

        lora = job.spec.method.lora_settings
        model = get_peft_model(model, LoraConfig(r=lora.rank, lora_alpha=lora.alpha,
                                                 target_modules=list(job.lora_modules)))
    model.train()
    optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.randint(0, m.vocab_size, (job.micro_batch_size, job.max_seq_len))
    elapsed = 0.0
    for step in range(steps + 1):
        start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if step:
            elapsed += time.perf_counter() - start
    return float(job.tokens_per_step * steps / elapsed)


def cpu_runs(steps: int) -> tuple[list[Any], dict[str, float]]:
    import torch
    from ftspec.compiler.cpu_peak import probe
    from ftspec.compiler.throughput import Hardware
    from ftspec.compiler.throughput_fit import measured_run

    runs = []
    probes: dict[str, Any] = {"threads": torch.get_num_threads()}
    for case in CPU_CASES:
        # probed again before each case: on a shared machine the peak moves with the load
        flops, bw = probe("fp32")
        probes[case] = {"peak_gflops_fp32": round(flops / 1e9, 1),
                        "memory_gbps": round(bw / 1e9, 1)}
        job = cpu_job(case)
        measured = train_cpu(job, steps)
        print(f"  {case}: probe {flops / 1e9:.1f} GFLOP/s fp32, {bw / 1e9:.1f} GB/s; "
              f"trained {measured:,.1f} tokens/s", flush=True)
        runs.append(measured_run(f"cpu:{case}", job, Hardware(flops, bw, 1.0, "cpu"),
                                 measured))
    return runs, probes


def _rate(tokens_per_s: float) -> str:
    return f"{tokens_per_s:,.0f}" if tokens_per_s >= 100 else f"{tokens_per_s:.2f}"


def recorded_cpu_runs(path: Path) -> list[Any]:
    """The CPU runs of an earlier ``--json`` file, priced again by the installed model
    (each with the probe taken before it)."""
    from ftspec.compiler.throughput import Hardware
    from ftspec.compiler.throughput_fit import measured_run

    report = json.loads(path.read_text())
    runs = []
    for row in report["cpu"]:
        case = row["case"].removeprefix("cpu:")
        probe = report["cpu_probe"][case]
        hardware = Hardware(probe["peak_gflops_fp32"] * 1e9, probe["memory_gbps"] * 1e9, 1.0,
                            "cpu")
        runs.append(measured_run(row["case"], cpu_job(case), hardware, row["measured"]))
    return runs


def table(title: str, runs: list[Any]) -> list[dict[str, Any]]:
    from ftspec.compiler.throughput_fit import fit, leave_one_out

    fitted = fit(runs)
    held = {h.case: h for h in leave_one_out(runs)}
    print(f"\n{title}: efficiency fitted per launcher family: "
          + ", ".join(f"{k} {v:.4f}" for k, v in fitted.items()))
    print("| case | family | efficiency reached | predicted tokens/s (leave-one-out) | "
          "measured tokens/s | error |")
    print("|---|---|---|---|---|---|")
    rows = []
    for run in runs:
        h = held.get(run.case)
        pred = _rate(h.predicted) if h else "n/a (alone in its family)"
        err = f"{100 * h.error:+.1f}%" if h else "n/a"
        print(f"| {run.case} | {run.family} | {run.efficiency:.3f} | {pred} | "
              f"{_rate(run.tokens_per_s)} | {err} |")
        rows.append({"case": run.case, "family": run.family,
                     "efficiency": round(run.efficiency, 4),
                     "predicted": round(h.predicted, 1) if h else None,
                     "measured": run.tokens_per_s,
                     "error": round(h.error, 4) if h else None})
    errors = [abs(h.error) for h in held.values()]
    if errors:
        print(f"largest |error| {100 * max(errors):.1f}%, mean "
              f"{100 * sum(errors) / len(errors):.1f}% over {len(errors)} runs")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-steps", type=int, default=2)
    parser.add_argument("--no-cpu", action="store_true", help="only the recorded H100 runs")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--cpu-from", type=Path, default=None, metavar="FILE",
                        help="price the CPU runs recorded in FILE (an earlier --json) "
                        "instead of measuring new ones")
    args = parser.parse_args()
    report: dict[str, Any] = {"h100": table("H100 (recorded)", h100_runs())}
    if args.cpu_from:
        report["cpu"] = table(f"CPU (recorded in {args.cpu_from})",
                              recorded_cpu_runs(args.cpu_from))
    elif not args.no_cpu:
        runs, probe = cpu_runs(args.cpu_steps)
        report["cpu_probe"] = probe
        report["cpu"] = table("CPU (measured now)", runs)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
