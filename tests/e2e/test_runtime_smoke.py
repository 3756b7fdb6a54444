"""Real CPU training runs of what ftspec compiles: torchtune recipes and the accelerate entrypoint.

Every run uses the tiny generated assets (no downloads) and a few optimizer steps. Each run's wall
time and peak memory (summed RSS over the process tree) are printed and attached to the test
report as properties.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from ftspec.reconciler.local.tiny import TinyAssets, generate_tiny_assets
from helpers.trainer_log import train_records

pytestmark = pytest.mark.e2e

CPU_COMPAT = Path(__file__).parent / "cpu_compat"
SEED = 42
Record = Callable[[str, object], None]  # pytest's record_property
TORCHTUNE_LOSS = re.compile(r"^Step (\d+) \| loss:(\S+) ", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    wall_s: float
    peak_rss_mib: float
    max_workers: int  # most descendants seen at once whose command line has the worker marker


@pytest.fixture(scope="session")
def run_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Offline, with a private Hugging Face cache (torchtune's json dataset writes one)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "HF_HOME": str(tmp_path_factory.mktemp("hf_home")), "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="session")
def llama2_assets(tmp_path_factory: pytest.TempPathFactory) -> TinyAssets:
    return generate_tiny_assets(tmp_path_factory.mktemp("tiny") / "llama2", family="llama2")


def run_measured(cmd: list[str], env: dict[str, str], record: Record, name: str,
                 worker_marker: str = "", timeout_s: float = 300.0) -> Run:
    """Run `cmd`, sampling its process tree every 0.1 s: summed RSS and worker processes."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    assert proc.stdout is not None
    chunks: list[str] = []
    reader = threading.Thread(target=chunks.extend, args=(proc.stdout,), daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    peak, most = 0, 0
    while proc.poll() is None and time.monotonic() - start < timeout_s:
        tree = _tree(root)
        peak = max(peak, sum(_rss(p) for p in tree))
        most = max(most, sum(worker_marker in _cmdline(p) for p in tree[1:]))
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    reader.join()
    result = Run(proc.wait(), "".join(chunks), time.monotonic() - start, peak / 2**20, most)
    print(f"{name}: wall {result.wall_s:.1f} s, peak RSS {result.peak_rss_mib:.0f} MiB, "
          f"{result.max_workers} workers, exit {result.returncode}")
    record(f"{name}_wall_s", round(result.wall_s, 1))
    record(f"{name}_peak_rss_mib", round(result.peak_rss_mib))
    return result


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except psutil.Error:
        return 0


# --- tiny assets -----------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["llama2", "llama3_2"])
def test_tiny_assets_are_deterministic_small_and_reused(
        tmp_path: Path, family: str) -> None:
    first = generate_tiny_assets(tmp_path / "a", family=family, seed=3)
    second = generate_tiny_assets(tmp_path / "b", family=family, seed=3)
    files = _files(tmp_path / "a")
    assert files == _files(tmp_path / "b")
    expected = {"dataset.jsonl", "manifest.json", "model/config.json", "model/model.safetensors"}
    assert expected <= set(files)
    for rel in files:
        data = (tmp_path / "a" / rel).read_bytes()
        assert data == (tmp_path / "b" / rel).read_bytes(), rel
        assert 0 < len(data) < 1_000_000, rel
    assert second.tokenizer_path.is_file()
    assert (second.special_tokens_path is not None) == (family == "llama3_2")

    mtimes = {rel: (tmp_path / "a" / rel).stat().st_mtime_ns for rel in files}
    (tmp_path / "a" / "unrelated.txt").write_text("a run's output next to the assets")
    assert generate_tiny_assets(tmp_path / "a", family=family, seed=3) == first
    assert mtimes == {rel: (tmp_path / "a" / rel).stat().st_mtime_ns for rel in files}

    (tmp_path / "a" / "dataset.jsonl").write_text("tampered\n")
    generate_tiny_assets(tmp_path / "a", family=family, seed=3)
    assert first.dataset_path.read_bytes() == second.dataset_path.read_bytes()

    other_seed = generate_tiny_assets(tmp_path / "a", family=family, seed=4)
    assert other_seed.model_dir.joinpath("model.safetensors").read_bytes() != \
        second.model_dir.joinpath("model.safetensors").read_bytes()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_tiny_dataset_rows_are_alpaca_style(llama2_assets: TinyAssets) -> None:
    rows = [json.loads(line) for line in llama2_assets.dataset_path.read_text().splitlines()]
    assert len(rows) == 64
    assert all(set(row) == {"instruction", "input", "output"} for row in rows)
    assert all(all(isinstance(v, str) and v for v in row.values()) for row in rows)


@pytest.mark.parametrize("family", ["llama2", "llama3_2"])
def test_torchtune_and_transformers_load_the_same_weights(tmp_path: Path, family: str) -> None:
    """FullModelHFCheckpointer and LlamaForCausalLM load the tiny model and agree on logits."""
    import torch
    import transformers
    from torchtune.training import FullModelHFCheckpointer

    assets = generate_tiny_assets(tmp_path / "assets", family=family)
    checkpointer = FullModelHFCheckpointer(
        checkpoint_dir=str(assets.model_dir), checkpoint_files=["model.safetensors"],
        model_type=family.upper(), output_dir=str(tmp_path / "out"))
    if family == "llama2":
        from torchtune.models.llama2 import llama2 as builder
        from torchtune.models.llama2 import llama2_tokenizer

        tokenizer = llama2_tokenizer(str(assets.tokenizer_path))
    else:
        from torchtune.models.llama3 import llama3_tokenizer
        from torchtune.models.llama3_2 import llama3_2 as builder

        tokenizer = llama3_tokenizer(str(assets.tokenizer_path),
                                     special_tokens_path=str(assets.special_tokens_path))
    tune_model = builder(**assets.dims)
    tune_model.load_state_dict(checkpointer.load_checkpoint()["model"], strict=True)
    hf_model = transformers.LlamaForCausalLM.from_pretrained(str(assets.model_dir))

    text = "Reverse the words. red cat sees blue dog"
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    tokens = torch.tensor([ids])
    with torch.no_grad():
        torch.testing.assert_close(tune_model(tokens), hf_model(tokens).logits,
                                   rtol=1e-4, atol=1e-4)
    if family == "llama2":
        hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(assets.model_dir))
        assert hf_tokenizer(text)["input_ids"] == ids[:-1]  # transformers adds BOS, not EOS


# --- torchtune -------------------------------------------------------------------------------


def torchtune_overrides(assets: TinyAssets, output_dir: Path) -> list[str]:
    """The `key=value` overrides that turn a shipped llama2 LoRA config into the tiny CPU run."""
    model = [f"model.{key}={value}" for key, value in assets.dims.items()]
    return [
        f"output_dir={output_dir}", "device=cpu", "dtype=fp32", f"seed={SEED}",
        "model._component_=torchtune.models.llama2.lora_llama2", *model,
        "model.lora_rank=4", "model.lora_alpha=8",
        f"tokenizer.path={assets.tokenizer_path}", "tokenizer.max_seq_len=128",
        f"checkpointer.checkpoint_dir={assets.model_dir}",
        "checkpointer.checkpoint_files=[model.safetensors]",
        "dataset._component_=torchtune.datasets.instruct_dataset", "dataset.source=json",
        f"dataset.data_files={assets.dataset_path}", "dataset.split=train",
        "batch_size=2", "gradient_accumulation_steps=1", "epochs=1", "max_steps_per_epoch=3",
        "lr_scheduler.num_warmup_steps=1",
    ]


def torchtune_losses(output_dir: Path) -> list[float]:
    logs = sorted((output_dir / "logs").glob("log_*.txt"))
    assert len(logs) == 1, logs
    steps = TORCHTUNE_LOSS.findall(logs[0].read_text())
    assert [int(step) for step, _ in steps] == [1, 2, 3]
    losses = [float(loss) for _, loss in steps]
    assert all(math.isfinite(loss) and loss > 0 for loss in losses)
    return losses


def assert_lora_outputs(output_dir: Path) -> None:
    epoch = output_dir / "epoch_0"
    for name in ("adapter_model.safetensors", "adapter_config.json", "adapter_model.pt"):
        assert (epoch / name).stat().st_size > 0, name


def resolve_config(base: str, overrides: list[str], dest: Path) -> Path:
    """Shipped torchtune config + overrides, written as one YAML (what the compiler emits)."""
    from omegaconf import OmegaConf

    spec = importlib.util.find_spec("recipes")
    assert spec is not None and spec.submodule_search_locations
    base_file = Path(spec.submodule_search_locations[0]) / "configs" / f"{base}.yaml"
    resolved = OmegaConf.merge(OmegaConf.load(base_file), OmegaConf.from_dotlist(overrides))
    OmegaConf.save(resolved, dest, resolve=True)
    return dest


def test_tune_run_single_device_lora(
        llama2_assets: TinyAssets, tmp_path: Path, run_env: dict[str, str],
        record_property: Record) -> None:
    out = tmp_path / "overrides"
    cmd = ["tune", "run", "lora_finetune_single_device",
           "--config", "llama2/7B_lora_single_device", *torchtune_overrides(llama2_assets, out)]
    run = run_measured(cmd, run_env, record_property, "tune_single_device_overrides")
    assert run.returncode == 0, run.output[-4000:]
    assert_lora_outputs(out)
    losses = torchtune_losses(out)

    resolved_out = tmp_path / "resolved"
    config = resolve_config("llama2/7B_lora_single_device",
                            torchtune_overrides(llama2_assets, resolved_out),
                            tmp_path / "resolved.yaml")
    run = run_measured(["tune", "run", "lora_finetune_single_device", "--config", str(config)],
                       run_env, record_property, "tune_single_device_resolved")
    assert run.returncode == 0, run.output[-4000:]
    assert_lora_outputs(resolved_out)
    assert torchtune_losses(resolved_out) == losses  # same seed, same config: same run


def test_tune_run_distributed_lora_on_cpu(
        llama2_assets: TinyAssets, tmp_path: Path, run_env: dict[str, str],
        record_property: Record) -> None:
    out = tmp_path / "out"
    path = os.pathsep.join(filter(None, [str(CPU_COMPAT), run_env.get("PYTHONPATH")]))
    cmd = ["tune", "run", "--nnodes", "1", "--nproc-per-node", "2", "lora_finetune_distributed",
           "--config", "llama2/7B_lora", *torchtune_overrides(llama2_assets, out)]
    run = run_measured(cmd, {**run_env, "PYTHONPATH": path}, record_property,
                       "tune_distributed_2proc", worker_marker="lora_finetune_distributed")
    assert run.returncode == 0, run.output[-4000:]
    assert run.max_workers == 2  # and gloo's process group only forms once both ranks join
    assert "Memory stats after model init" in run.output  # the rank-0 stats call ran on CPU
    assert_lora_outputs(out)
    torchtune_losses(out)


_INIT_AS_TORCHTUNE_DOES = """
import torch.distributed as dist
dist.init_process_group("cuda:nccl,cpu:gloo", store=dist.HashStore(), rank=0, world_size=1)
print("backend", dist.get_backend())
"""
_TORCHTUNE_CPU_CALLS = """
import torch
from torchtune import training
training.cleanup_before_training()
print("peak GiB", training.get_memory_stats(torch.device("cpu"))["peak_memory_alloc"])
"""
_AS_IF_CUDA_BUILD = """
import sys, types, torch, sitecustomize
real = torch.cuda.is_available
sys.modules["torch.version"] = types.SimpleNamespace(cuda="12.4", hip=None)
torch.cuda.is_available = lambda: True  # a GPU build that sees a device...
no_gpu = sitecustomize._cpu_only_torch()
torch.cuda.is_available = real  # ...decided; importing torchao with a fake device would fail
sitecustomize._cpu_only_torch = lambda: no_gpu
from torchtune import training
print("untouched", no_gpu is False, not hasattr(torch.cpu, "empty_cache"),
      not hasattr(training.get_memory_stats, "__wrapped__"))
"""


def test_cpu_compat_adjusts_only_a_torch_without_a_gpu(run_env: dict[str, str]) -> None:
    def python(code: str, compat: bool) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join(filter(None, [str(CPU_COMPAT) if compat else "",
                                             run_env.get("PYTHONPATH")]))
        return subprocess.run([sys.executable, "-c", code], check=False, env={**run_env, "PYTHONPATH": path},
                              capture_output=True, text=True, timeout=120)

    plain = python(_INIT_AS_TORCHTUNE_DOES, compat=False)
    assert plain.returncode != 0 and "NCCL" in plain.stderr  # the problem being fixed
    assert python(_INIT_AS_TORCHTUNE_DOES, compat=True).stdout.split() == ["backend", "gloo"]

    calls = python(_TORCHTUNE_CPU_CALLS, compat=True)
    assert calls.returncode == 0, calls.stderr[-2000:]
    assert float(calls.stdout.split()[-1]) > 0

    cuda = python(_AS_IF_CUDA_BUILD, compat=True)
    assert cuda.stdout.split() == ["untouched", "True", "True", "True"], cuda.stderr[-2000:]


# --- accelerate + the HF entrypoint ----------------------------------------------------------


def accelerate_config(path: Path) -> Path:
    """A GPU-style MULTI_GPU config forced onto CPU (see docs/runtime.md for why not MULTI_CPU)."""
    with socket.socket() as sock:  # accelerate refuses a busy main_process_port
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path.write_text(
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: MULTI_GPU\n"
        "num_machines: 1\n"
        "num_processes: 2\n"
        "machine_rank: 0\n"
        f"main_process_port: {port}\n"
        "mixed_precision: 'no'\n"
        "use_cpu: true\n"
        "rdzv_backend: static\n"
        "same_network: true\n")
    return path


def test_accelerate_launch_hf_sft_lora_two_processes(
        llama2_assets: TinyAssets, tmp_path: Path, run_env: dict[str, str],
        record_property: Record) -> None:
    out = tmp_path / "out"
    sft = tmp_path / "sft.yaml"  # TRL's own config keys (what `trl sft --config` reads)
    sft.write_text(json.dumps({
        "model_name_or_path": str(llama2_assets.model_dir), "max_length": 128,
        "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1,
        "learning_rate": 1e-3, "max_steps": 3, "lr_scheduler_type": "cosine",
        "warmup_steps": 1, "seed": SEED, "bf16": False, "gradient_checkpointing": False,
        "use_peft": True, "lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0,
        "lora_target_modules": ["q_proj", "v_proj"], "logging_steps": 1,
        "save_strategy": "no", "report_to": "none", "output_dir": str(out)}))
    prepare = tmp_path / "prepare.json"
    prepare.write_text(json.dumps({"train": [{
        "source": str(llama2_assets.dataset_path), "format": "completion",
        "prompt_template": "{task}\n{words}\n", "completion_template": "{answer}",
        "column_map": {"task": "instruction", "words": "input", "answer": "output"}}]}))
    # accelerate of this interpreter, so its workers import the ftspec under test
    cmd = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch",
           "--config_file", str(accelerate_config(tmp_path / "acc.yaml")),
           "--num_processes", "2", "-m", "ftspec.runtime.hf_sft",
           "--config", str(sft), "--prepare", str(prepare)]
    run = run_measured(cmd, {**run_env, "ACCELERATE_USE_CPU": "true"}, record_property,
                       "accelerate_hf_sft_2proc", worker_marker="runtime.hf_sft")
    assert run.returncode == 0, run.output[-4000:]
    assert run.max_workers == 2
    steps = train_records(run.output)
    assert len(steps) == 3 and all(math.isfinite(r.loss or math.nan) for r in steps)
    # the two processes trained together: each step takes 4 rows per rank of the 64, so
    # the trainer's epoch counter moves 8/64 a step (4/64 for a process alone)
    assert [round((r.epoch or 0) * 64 / 8) for r in steps] == [1, 2, 3], steps
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and sorted(adapter["target_modules"]) == ["q_proj", "v_proj"]
    assert (out / "adapter_model.safetensors").stat().st_size > 0


def test_hf_sft_renders_templates_through_the_column_map(tmp_path: Path) -> None:
    from ftspec.runtime import hf_sft

    data = tmp_path / "d.jsonl"
    data.write_text('{"question": "two plus two", "answer": "four"}\n\n')
    src = {"source": str(data), "column_map": {"input": "question", "output": "answer"},
           "prompt_template": "Q: {input}\nA: ", "completion_template": "{output}"}
    assert hf_sft.load_examples(hf_sft.Plan.from_json({"train": [src]})) == [
        ("Q: two plus two\nA: ", "four")]

    bad = hf_sft.Plan.from_json({"train": [{**src, "prompt_template": "{instruction}"}]})
    with pytest.raises(SystemExit, match=r"d.jsonl:1: template field 'instruction'"):
        hf_sft.load_examples(bad)
