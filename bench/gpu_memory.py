"""Benchmark: ftspec's per-GPU memory estimate against what its compiled jobs allocate.

    python bench/gpu_memory.py --work DIR [--cases acc-lora,acc-full,tt-lora,tt-full]
                               [--family llama3_2-1b] [--rows 100] [--batch 4] [--seq 2048]
                               [--json OUT.json] [--tiny]

Needs one CUDA GPU, the launchers (``ftspec[accelerate,torchtune]``) and no network. It
writes, under ``--work``:

- a model with the shapes of ``--family`` (a Llama 3.2 catalog family, ``llama3_2-1b`` by
  default: 16 layers, hidden 2048, 32 / 8 heads, MLP 8192, vocabulary 128256, tied
  embeddings; ``llama3_2-3b``: 28 layers, hidden 3072, 24 / 8 heads, MLP 8192) and random
  weights, saved by transformers in bf16; nothing is downloaded (the llama3 tokenizer below
  fits these families only);
- a small tokenizer: ftspec's generated llama3 tiktoken file (``ftspec quickstart``'s, 320
  ids) in Meta's ``original/`` layout for torchtune, and the same ranks converted to a
  Hugging Face ``tokenizer.json`` beside it for TRL (both give the same ids). The model keeps
  the real vocabulary, so the logits are as large as the real model's;
- ``--rows`` Alpaca rows, each longer than ``--seq`` tokens, so every micro batch is exactly
  ``--batch`` x ``--seq`` tokens after truncation (the length the estimate prices);
- one spec per case (local backend, ``nvidia-h100-80gb``, bf16, one epoch of rows / batch
  steps, AdamW, clipping at 1.0). A case is ``LAUNCHER-METHOD[-FLAG...]``: ``acc`` / ``tt``,
  ``lora`` (rank 8 on all seven projections) / ``full``; flags ``gc`` (gradient
  checkpointing), ``chunked`` (``training.loss: chunked_cross_entropy``), ``noclip``
  (``max_grad_norm: null``: torchtune's full single-device config then steps the optimizer
  in backward, as shipped).

Each case runs ``ftspec explain --json`` (the estimate and its breakdown) and then
``ftspec apply --auto-approve --wait --json``, which runs the compiled launcher command
unchanged. The peak is read from inside the launcher's processes without touching what runs:
a ``sitecustomize.py`` on ``PYTHONPATH`` registers an exit hook in every Python process that
writes ``torch.cuda.max_memory_allocated()`` / ``max_memory_reserved()`` when the process
used CUDA (torchtune resets those counters at every logged step: the reset is wrapped so the
peak before it is kept); ``nvidia-smi`` sampled every 200 ms gives the driver's figure (the
run's processes with their CUDA contexts; this script itself never touches the GPU, and the
figure before the case starts is subtracted). Tokens per second come from the run's own log:
torchtune's ``tokens_per_second_per_gpu`` per step (median after the first two steps); TRL's
training progress bar's pace from step 5 on x tokens per step and, including the first
steps, ``num_tokens`` over the Trainer's ``train_runtime``. The results go to ``--json`` and
a table to stdout.

``--tiny`` runs the same path on CPU with a two-layer model (no memory figures): a check of
the script, not a measurement.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FTSPEC = [sys.executable, "-m", "ftspec.cli"]
FAMILY = "llama3_2-1b"
FAMILIES = ("llama3_2-1b", "llama3_2-3b")
"""Families the generated llama3 tokenizer and ``LlamaConfig`` fit."""
ACCELERATOR = "nvidia-h100-80gb"
CASES = ("acc-lora", "acc-full", "tt-lora", "tt-full")
LAUNCHERS = {"acc": "accelerate", "tt": "torchtune"}
TINY_DIMS = {"num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
             "intermediate_dim": 128, "vocab_size": 512, "max_seq_len": 8192}
MEMORY_ENV = "FTSPEC_BENCH_MEMORY"
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "torchtune",
            "torchao", "tokenizers")
SITECUSTOMIZE = '''"""Written by bench/gpu_memory.py: the CUDA peak of every Python process, at exit.

torchtune resets the peak counters before training and at every logged step; the reset is
wrapped so the peak before it is kept (the run itself is unchanged).
"""
import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys

_peak = {"max_allocated": 0, "max_reserved": 0, "resets": 0}


def _note():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    _peak["max_allocated"] = max(_peak["max_allocated"], torch.cuda.max_memory_allocated())
    _peak["max_reserved"] = max(_peak["max_reserved"], torch.cuda.max_memory_reserved())
    return True


def _patch(torch):
    original = torch.cuda.reset_peak_memory_stats

    def reset_peak_memory_stats(device=None):
        _note()
        _peak["resets"] += 1
        return original(device)

    torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats
    torch.cuda.memory.reset_peak_memory_stats = reset_peak_memory_stats


class _AfterTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


def _dump():
    path = os.environ.get("%(env)s")
    if not path or not _note():
        return
    record = {"pid": os.getpid(), "argv": sys.argv[:4], **_peak}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\\n")


sys.meta_path.insert(0, _AfterTorch())
atexit.register(_dump)
# Hand on to the sitecustomize this one shadows, if the interpreter has one.
_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
'''
_WORDS = ("red", "blue", "green", "small", "big", "old", "new", "cat", "dog", "bird", "fish",
          "tree", "house", "river", "stone", "sun", "moon", "sees", "likes", "eats", "finds",
          "moves", "holds", "near", "over", "under", "and", "the", "a", "one", "two", "three")


@dataclass(frozen=True)
class Assets:
    model_dir: Path
    rows: Path
    num_rows: int
    row_tokens: tuple[int, int]
    """Shortest and longest row in tokens, before truncation."""


# --- assets ----------------------------------------------------------------------------------


def build_assets(work: Path, *, tiny: bool, rows: int, seq: int,
                 family: str = FAMILY) -> Assets:
    from ftspec.reconciler.local.tiny import generate_tiny_assets

    tok = generate_tiny_assets(work / "tokenizer-src", family="llama3_2")
    assert tok.special_tokens_path is not None
    model_dir = work / "model"
    original = model_dir / "original"
    original.mkdir(parents=True, exist_ok=True)
    shutil.copy(tok.tokenizer_path, original / "tokenizer.model")
    shutil.copy(tok.special_tokens_path, original / "special_tokens.json")
    _write_hf_tokenizer(original)
    marker = model_dir / "family.txt"  # a --work folder reused for another family
    wanted = "tiny" if tiny else family
    if not (model_dir / "model.safetensors").is_file() or \
            (marker.read_text() if marker.is_file() else FAMILY) != wanted:
        _write_model(model_dir, tiny=tiny, family=family)
        marker.write_text(wanted)
    path = work / "rows.jsonl"
    lengths = _write_rows(path, original, rows, seq)
    return Assets(model_dir, path, rows, (min(lengths), max(lengths)))


def _write_hf_tokenizer(original: Path) -> None:
    """The tiktoken ranks and llama3 special tokens as a Hugging Face fast tokenizer (TRL
    loads the tokenizer folder; the rows it trains on are tokenized by torchtune's)."""
    from torchtune.models.llama3._tokenizer import CL100K_PATTERN
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    added = json.loads((original / "special_tokens.json").read_text())["added_tokens"]
    specials = [t["content"] for t in sorted(added, key=lambda t: t["id"])]
    converted = TikTokenConverter(vocab_file=str(original / "tokenizer.model"),
                                  pattern=CL100K_PATTERN,
                                  additional_special_tokens=specials).converted()
    PreTrainedTokenizerFast(tokenizer_object=converted, bos_token="<|begin_of_text|>",
                            eos_token="<|end_of_text|>",
                            pad_token="<|finetune_right_pad_id|>").save_pretrained(original)


def _write_model(model_dir: Path, *, tiny: bool, family: str) -> None:
    """Random weights with the catalog family's shapes (transformers' own initialisation)."""
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    f = MODEL_FAMILIES[family]
    dims = {"num_layers": f.num_layers, "embed_dim": f.hidden_size, "num_heads": f.num_heads,
            "num_kv_heads": f.num_kv_heads, "intermediate_dim": f.intermediate_size,
            "vocab_size": f.vocab_size, "max_seq_len": f.max_seq_len,
            "head_dim": f.attn_head_dim}
    write_llama(model_dir, TINY_DIMS if tiny else dims, fp32=tiny)


def write_llama(model_dir: Path, dims: dict[str, int], *, fp32: bool = False) -> None:
    """A Llama model of ``dims`` (torchtune's names, as ``model.architecture`` spells them;
    tied embeddings) with transformers' random initialisation, saved in bf16 (fp32 with
    ``fp32``) as one ``model.safetensors``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        num_hidden_layers=dims["num_layers"], hidden_size=dims["embed_dim"],
        num_attention_heads=dims["num_heads"], num_key_value_heads=dims["num_kv_heads"],
        intermediate_size=dims["intermediate_dim"], vocab_size=dims["vocab_size"],
        max_position_embeddings=dims["max_seq_len"],
        head_dim=dims.get("head_dim") or dims["embed_dim"] // dims["num_heads"],
        rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu",
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192},
        bos_token_id=304, eos_token_id=305)  # the generated tokenizer's ids
    torch.manual_seed(0)
    # on the CPU: a CUDA context here would sit in the driver's figure of every case
    model = LlamaForCausalLM(config).to(torch.float32 if fp32 else torch.bfloat16)
    model.save_pretrained(model_dir, max_shard_size="20GB")  # one model.safetensors


def _write_rows(path: Path, original: Path, count: int, seq: int) -> list[int]:
    """Alpaca rows (instruction / input / output) longer than ``seq`` tokens each."""
    from torchtune.models.llama3 import llama3_tokenizer

    tokenizer = llama3_tokenizer(str(original / "tokenizer.model"),
                                 special_tokens_path=str(original / "special_tokens.json"))
    rng = random.Random(0)
    rows, lengths = [], []
    for i in range(count):
        words = seq  # about two tokens a word here
        body = " ".join(rng.choices(_WORDS, k=words))
        row = {"instruction": f"Rewrite passage {i} with the words in reverse order.",
               "input": body[: len(body) // 3], "output": body[len(body) // 3:]}
        lengths.append(len(tokenizer.encode(" ".join(row.values()))))
        rows.append(row)
    if min(lengths) <= seq:
        raise SystemExit(f"a row has {min(lengths)} tokens, not more than --seq {seq}")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return lengths


# --- specs -----------------------------------------------------------------------------------


def report_options(report: dict[str, Any]) -> dict[str, Any]:
    """The case_spec options a recorded report was run with (older reports: the defaults)."""
    return {"family": report.get("family", FAMILY)}


def case_spec(case: str, assets: Assets, work: Path, *, tiny: bool, batch: int,
              seq: int, family: str = FAMILY) -> dict[str, Any]:
    launcher, method, *flags = case.split("-")
    unknown = set(flags) - {"gc", "chunked", "noclip"}
    if unknown or launcher not in LAUNCHERS or method not in ("lora", "full"):
        raise SystemExit(f"unknown case {case!r}")
    original = assets.model_dir / "original"
    model: dict[str, Any] = {
        "uri": f"file://{assets.model_dir}", "dtype": "fp32" if tiny else "bf16",
        # both launchers tokenize alpaca rows with torchtune's llama3 tokenizer, which takes
        # the generated tokenizer's special-token ids from this file (else Meta's 128000+)
        "tokenizer": {"uri": f"file://{original / 'tokenizer.model'}",
                      "special_tokens_uri": f"file://{original / 'special_tokens.json'}"}}
    if tiny:
        model["architecture"] = {"base": "llama3_2", **TINY_DIMS}
    else:
        model["family"] = family
    method_spec: dict[str, Any] = {"kind": method}
    if method == "lora":
        method_spec["lora"] = {"rank": 8, "alpha": 16, "dropout": 0.0,
                               "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
                               "mlp": True}
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": f"gpu-{case}"},
        "model": model,
        "data": {"train": {"uri": f"file://{assets.rows}", "format": "alpaca",
                           "num_examples": assets.num_rows},
                 "max_seq_len": seq},
        "method": method_spec,
        "training": {"epochs": 1, "global_batch_size": batch, "micro_batch_size": batch,
                     "learning_rate": 2e-5 if method == "full" else 2e-4,
                     "gradient_checkpointing": "gc" in flags,
                     "loss": "chunked_cross_entropy" if "chunked" in flags else "cross_entropy",
                     "max_grad_norm": None if "noclip" in flags else 1.0,
                     "logging": {"steps": 1}, "seed": 42,
                     "checkpointing": {"strategy": "no"} if launcher == "acc" else {}},
        "resources": {"gpus_per_node": 0} if tiny else
        {"gpus_per_node": 1, "accelerator": ACCELERATOR},
        "output": {"uri": f"file://{work / 'out' / case}"},
        "launcher": LAUNCHERS[launcher],
        "deploy": {"target": "local"},
    }


# --- measuring -------------------------------------------------------------------------------


def _ftspec(args: list[str], work: Path, env: dict[str, str], timeout: float
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FTSPEC, *args], cwd=work, env=env, capture_output=True, text=True,
                          check=False, timeout=timeout)


def _smi_used() -> int | None:
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", ("--format=csv,noheader,"
                          "nounits")], capture_output=True, text=True, check=False).stdout
    return int(out.split()[0]) if out.strip() else None


def run_case(case: str, spec_path: Path, work: Path, env: dict[str, str],
             timeout: float) -> dict[str, Any]:
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    explained = _ftspec(["explain", str(spec_path), "--json"], work, env, 120)
    if explained.returncode != 0:
        return {"case": case, "error": f"explain exited {explained.returncode}: "
                f"{explained.stderr[-2000:]}"}
    estimate = json.loads(explained.stdout)
    memory_file = logs / f"{case}.memory.jsonl"
    memory_file.unlink(missing_ok=True)
    smi_file = logs / f"{case}.smi.csv"
    run_env = {**env, MEMORY_ENV: str(memory_file)}
    baseline = _smi_used()
    sampler = None
    if baseline is not None:
        sampler = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
             "-lms", "200"], stdout=smi_file.open("w"), stderr=subprocess.DEVNULL)
    start = time.perf_counter()
    try:
        applied = _ftspec(["apply", str(spec_path), "--auto-approve", "--wait", "--json"],
                          work, run_env, timeout)
        code: int | str = applied.returncode
        out, err = applied.stdout, applied.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = "timeout", str(e.stdout or ""), str(e.stderr or "")
        _ftspec(["destroy", str(spec_path), "--auto-approve"], work, env, 120)  # stop it
    wall = time.perf_counter() - start
    if sampler is not None:
        sampler.terminate()
        sampler.wait()
    (logs / f"{case}.apply.out").write_text(out)
    (logs / f"{case}.apply.err").write_text(err)
    train_log = _train_log(work, spec_path)
    records = [json.loads(line) for line in memory_file.read_text().splitlines()] \
        if memory_file.is_file() else []
    smi = [int(x) for x in smi_file.read_text().split() if x.isdigit()] \
        if smi_file.is_file() else []
    return {
        "case": case, "launcher": LAUNCHERS[case.split("-")[0]], "exit": code,
        "estimate": estimate["memory"], "derived": estimate["derived"],
        "peak_allocated_bytes": max((r["max_allocated"] for r in records), default=None),
        "peak_reserved_bytes": max((r["max_reserved"] for r in records), default=None),
        "processes": records,
        "driver_peak_mib": max(smi, default=None), "driver_baseline_mib": baseline,
        "driver_run_mib": max(smi) - baseline if smi and baseline is not None else None,
        "wall_s": round(wall, 1),
        **_throughput(train_log, estimate["derived"]["tokens_per_step"],
                      estimate["derived"]["total_steps"]),
        "log_tail": None if code == 0 else (err[-3000:] + "\n--- train.log ---\n"
                                            + train_log[-4000:]),
    }


def _train_log(work: Path, spec_path: Path) -> str:
    log = work / ".ftspec" / "runs" / spec_path.stem / "train.log"
    return log.read_text(errors="replace") if log.is_file() else ""


_TT_STEP = re.compile(r"Step (\d+) \|.*?tokens_per_second_per_gpu:([0-9.]+)")
_TT_PEAK = re.compile(r"peak_memory_alloc:([0-9.]+)")
_TRL_VALUE = r"'{}': '?([0-9.e+-]+)"
_TQDM_RATE = r"\b(\d+)/{total} \[[^\]]*?,\s*([0-9.]+)(it/s|s/it)\]"


def _throughput(log: str, tokens_per_step: int, total_steps: int) -> dict[str, Any]:
    """Tokens per second as the run logged them: torchtune's per-step metric (median after
    the first two steps); TRL's training progress bar's pace (median from step 5) x tokens
    per step, and its tokens over the Trainer's ``train_runtime`` (first steps included)."""
    steps = _TT_STEP.findall(log)
    if steps:
        rates = [float(r) for _, r in steps]
        peaks = [float(p) for p in _TT_PEAK.findall(log)]
        return {"steps": len(steps), "tokens_per_s": round(statistics.median(rates[2:] or rates)),
                "launcher_peak_alloc_gib": max(peaks, default=None)}
    losses = re.findall(_TRL_VALUE.format("loss"), log)
    tokens = re.findall(_TRL_VALUE.format("num_tokens"), log)
    runtime = re.findall(_TRL_VALUE.format("train_runtime"), log)
    paces = re.findall(_TQDM_RATE.format(total=total_steps), log)
    out: dict[str, Any] = {"steps": len(losses), "tokens_per_s": None,
                           "tokens_seen": float(tokens[-1]) if tokens else None,
                           "train_runtime_s": float(runtime[-1]) if runtime else None}
    # the bar's pace from step 5 on (the first steps compile kernels; at the end the bar
    # shows the whole run's average instead)
    rates = [float(v) if unit == "it/s" else 1.0 / float(v)
             for n, v, unit in paces if 5 <= int(n) < total_steps]
    if rates:
        out["tokens_per_s"] = round(statistics.median(rates) * tokens_per_step)
    if out["tokens_seen"] and out["train_runtime_s"]:
        out["tokens_per_s_overall"] = round(out["tokens_seen"] / out["train_runtime_s"])
    return out


# --- report ----------------------------------------------------------------------------------


def _gib(value: float | None, scale: float = 1 << 30) -> float | None:
    return None if value is None else round(value / scale, 2)


def table(results: list[dict[str, Any]]) -> str:
    head = (f"{'case':15s} {'estimate':>9s} {'est-ovh':>8s} {'allocated':>10s} "
            f"{'reserved':>9s} {'driver':>7s} {'err%':>6s} {'tok/s':>8s} {'wall':>6s}")
    lines = [head, ("(GiB; est-ovh = estimate less its overhead term; driver = nvidia-smi's "
             "peak less its figure before the run; err% = (estimate - driver) / driver)")]
    for r in results:
        if "estimate" not in r:
            lines.append(f"{r['case']:15s} {r.get('error', '')[:200]}")
            continue
        est = r["estimate"]["total_gib"]
        driver = _gib(r["driver_run_mib"], 1024)
        err = f"{100 * (est - driver) / driver:+.1f}" if driver else "-"
        cells = [est, round(est - r["estimate"]["overhead_gib"], 2),
                 _gib(r["peak_allocated_bytes"]), _gib(r["peak_reserved_bytes"]), driver]
        text = [f"{c:.2f}" if c is not None else "-" for c in cells]
        lines.append(f"{r['case']:15s} {text[0]:>9s} {text[1]:>8s} {text[2]:>10s} "
                     f"{text[3]:>9s} {text[4]:>7s} {err:>6s} {r['tokens_per_s'] or '-':>8} "
                     f"{r['wall_s']:6.0f}" + ("" if r["exit"] == 0 else f"  exit {r['exit']}"))
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    device = None
    if shutil.which("nvidia-smi"):
        device = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                check=False).stdout.strip()
    return {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "device": device, "python": platform.python_version(), "packages": versions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--family", default=FAMILY, choices=FAMILIES)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--tiny", action="store_true", help="CPU, two-layer model: a check")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    site = work / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE % {"env": MEMORY_ENV})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(work / "hf_home"), "TOKENIZERS_PARALLELISM": "false",
           "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH"))
                                         if p)}
    started = time.perf_counter()
    assets = build_assets(work, tiny=args.tiny, rows=args.rows, seq=args.seq,
                          family=args.family)
    print(f"assets in {time.perf_counter() - started:.0f} s; rows {assets.row_tokens[0]}.."
          f"{assets.row_tokens[1]} tokens before truncation to {args.seq}", flush=True)
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    report = {**environment(), "command": " ".join([Path(sys.executable).name, *sys.argv]),
              "model": "tiny (--tiny)" if args.tiny else
              f"{args.family} shapes, random bf16 weights made by transformers",
              "family": args.family,
              "tokenizer": "ftspec's generated llama3 tiktoken (320 ids; the model keeps its "
                           "vocabulary)", "rows": args.rows, "batch": args.batch,
              "seq": args.seq, "row_tokens": assets.row_tokens, "results": []}
    results: list[dict[str, Any]] = report["results"]
    for case in args.cases.split(","):
        spec_path = work / "specs" / f"{case}.yaml"
        spec_path.parent.mkdir(exist_ok=True)
        with spec_path.open("w") as out:
            yaml.dump(case_spec(case, assets, work, tiny=args.tiny, batch=args.batch,
                                seq=args.seq, family=args.family), out)
        result = run_case(case, spec_path, work, env, args.timeout)
        results.append(result)
        print(table([result]).splitlines()[-1], flush=True)
        if result.get("log_tail"):
            print(result["log_tail"], flush=True)
        shutil.rmtree(work / "out" / case, ignore_errors=True)  # checkpoints: disk only
        if args.json:  # after every case: a run cut short keeps what it measured
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
