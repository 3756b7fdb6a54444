"""``model.precision`` is what the accelerate/TRL run really keeps: a tiny full fine-tune of
two steps on CPU, run from the compiled command, saves bf16 weights and bf16 AdamW moments
under pure bf16, and fp32 weights and moments (the master copy) under mixed bf16. A LoRA run
in pure bf16 shows what the memory estimate prices for TRL: PEFT keeps the adapters and their
moments in fp32 over the bf16 base."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.spec.validate import spec_from_data
from helpers.tinyspec import compile_to
from helpers.trainer_log import train_records

pytestmark = pytest.mark.e2e


def spec(assets: TinyAssets, out: Path, precision: str, method: str = "full",
         dtype: str = "bf16") -> dict[str, Any]:
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": f"tiny-{precision}"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": dtype, "precision": precision,
                  "architecture": {"base": "llama2", **assets.dims}},
        "data": {"train": {"uri": f"file://{assets.dataset_path}", "format": "completion",
                           "prompt_template": "{instruction}\n{input}\n",
                           "completion_template": "{output}"},
                 "max_seq_len": 64},
        "method": {"kind": method},
        "training": {"max_steps": 2, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 4, "learning_rate": 1e-3,
                     "scheduler": {"name": "constant"}, "logging": {"steps": 1},
                     "checkpointing": {"strategy": "steps", "steps": 2}},
        "resources": {"gpus_per_node": 0},
        "output": {"uri": f"file://{out}"},
        "launcher": "accelerate", "deploy": {"target": "local"},
    }


def dtypes(path: Path) -> set[str]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return {str(f.get_slice(k).get_dtype()) for k in f.keys()}  # noqa: SIM118


def moment_dtypes(path: Path) -> set[str]:
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True)["state"]
    return {str(s[k].dtype) for s in state.values() for k in ("exp_avg", "exp_avg_sq")}


def train(tmp_path: Path, env: dict[str, str], job_spec: dict[str, Any]) -> str:
    return run_compiled(tmp_path, env, job_spec)[0]


def run_compiled(tmp_path: Path, env: dict[str, str], job_spec: dict[str, Any],
                 ) -> tuple[str, str, str]:
    """(sft.yaml, accelerate.yaml, the run's output) of the compiled command's run."""
    files = compile_to(build_job(spec_from_data(job_spec)), "accelerate", tmp_path / "compiled")
    run = subprocess.run(["sh", str(files["command.sh"])], check=False, cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    return files["sft.yaml"].read_text(), files["accelerate.yaml"].read_text(), out


@pytest.mark.parametrize(("precision", "stored", "loaded"),
                         [("pure", "BF16", "torch.bfloat16"),
                          ("mixed", "F32", "torch.float32"),
                          ("autocast", "BF16", "torch.bfloat16")])
def test_saved_weights_and_optimizer_state_keep_the_precision(
    tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str], precision: str,
    stored: str, loaded: str,
) -> None:
    out = tmp_path / "out"
    sft = train(tmp_path, e2e_env, spec(tiny_assets, out, precision))
    assert ("dtype: float32" if precision == "mixed" else "dtype: bfloat16") in sft
    assert dtypes(out / "model.safetensors") == {stored}
    checkpoint = out / "checkpoint-2"
    assert dtypes(checkpoint / "model.safetensors") == {stored}
    assert moment_dtypes(checkpoint / "optimizer.pt") == {loaded}
    config = json.loads((out / "config.json").read_text())
    assert config["dtype" if "dtype" in config else "torch_dtype"] == loaded.split(".")[1]


def test_pure_bf16_lora_on_trl_keeps_fp32_adapters(
    tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str],
) -> None:
    out = tmp_path / "out"
    train(tmp_path, e2e_env, spec(tiny_assets, out, "pure", method="lora"))
    assert dtypes(out / "adapter_model.safetensors") == {"F32"}
    assert moment_dtypes(out / "checkpoint-2" / "optimizer.pt") == {"torch.float32"}


PROBE = """
import atexit, json, os
import torch

_seen = set()


def _record(module, args, output):
    if isinstance(module, torch.nn.Linear) and module.training:
        _seen.add((torch.is_autocast_enabled("cpu"), str(torch.get_autocast_dtype("cpu")),
                   str(module.weight.dtype)))


_scales = []
_unscale = torch.amp.GradScaler.unscale_


def _unscale_recorded(self, optimizer):
    _scales.append(self.get_scale())
    return _unscale(self, optimizer)


def _write():
    if _seen:
        with open(os.path.join(os.environ["FTSPEC_PROBE_DIR"], str(os.getpid())), "w") as f:
            json.dump(sorted(_seen), f)
    if _scales:
        with open(os.path.join(os.environ["FTSPEC_PROBE_DIR"], f"{os.getpid()}.scales"),
                  "w") as f:
            json.dump(_scales, f)


torch.amp.GradScaler.unscale_ = _unscale_recorded
torch.nn.modules.module.register_module_forward_hook(_record)
atexit.register(_write)
"""
"""A ``sitecustomize`` for the training processes: each records, for every training forward
of a linear layer, whether autocast was on, its dtype and the weight's dtype, and the scale
of every GradScaler unscale (one an optimizer step where a scaler runs)."""


class Probed(NamedTuple):
    sft: str
    accel: str
    losses: list[float]
    seen: list[list[Any]]
    """Per training process, its sorted (autocast on, autocast dtype, weight dtype)."""
    scales: list[list[float]]
    """Per training process that ran a GradScaler, the scale at each unscale."""


def probed_run(tmp_path: Path, env: dict[str, str], assets: TinyAssets,
               precision: str, method: str = "full", dtype: str = "bf16",
               learning_rate: float = 1e-3) -> Probed:
    """Sixteen logged steps (64 rows, 4 a step) of a tiny fine-tune, and what the probe saw
    in the training process."""
    probe = tmp_path / "probe"
    (probe / "site").mkdir(parents=True)
    (probe / "site" / "sitecustomize.py").write_text(PROBE)
    (probe / "seen").mkdir()
    env = {**env, "FTSPEC_PROBE_DIR": str(probe / "seen"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(probe / "site"),
                                                       env.get("PYTHONPATH")]))}
    job_spec = spec(assets, tmp_path / "out", precision, method=method, dtype=dtype)
    job_spec["training"].update(max_steps=16, checkpointing={"strategy": "no"},
                                learning_rate=learning_rate)
    sft, accel, out = run_compiled(tmp_path, env, job_spec)
    files = sorted((probe / "seen").iterdir())
    return Probed(sft, accel, [r.loss or 0.0 for r in train_records(out)],
                  [json.loads(p.read_text()) for p in files if not p.suffix],
                  [json.loads(p.read_text()) for p in files if p.suffix == ".scales"])


def test_autocast_over_bf16_weights_trains_on_the_accelerate_launcher(
    tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str],
) -> None:
    """bf16 weights under accelerate's and TRL's bf16 autocast (torch's CPU autocast): the
    training process computes every linear layer over bf16 weights inside autocast, and the
    loss falls. The same probe over pure bf16 sees no autocast, so it can tell the two."""
    sft, accel, losses, seen, scales = probed_run(tmp_path / "autocast", e2e_env, tiny_assets,
                                                  "autocast")
    assert "bf16: true" in sft and "dtype: bfloat16" in sft and "use_cpu: true" in sft
    assert "mixed_precision: bf16" in accel
    assert seen == [[[True, "torch.bfloat16", "torch.bfloat16"]]], seen
    assert scales == [], scales
    assert len(losses) == 16, losses
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5, losses
    pure = probed_run(tmp_path / "pure", e2e_env, tiny_assets, "pure").seen
    assert pure == [[[False, "torch.bfloat16", "torch.bfloat16"]]], pure


def test_fp16_lora_under_fp16_autocast_on_cpu_gets_no_autocast_from_accelerate(
    tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str],
) -> None:
    """fp16 LoRA under ``precision: autocast``, run from the compiled ``accelerate launch``
    command on CPU. ftspec compiles what the rule allows (TRL ``fp16: true`` over
    ``dtype: float16``, accelerate ``mixed_precision: fp16``) and the run trains: the base
    linear layers keep fp16 weights, PEFT's adapters are fp32 and saved fp32, the loss falls.
    But accelerate (1.15) turns native AMP on for fp16 only off CPU (``Accelerator.__init__``
    sets ``native_amp`` and builds the GradScaler only where the device is not ``cpu``), and
    transformers' Trainer leaves autocast to accelerate, so on CPU the training forward runs
    without autocast and no GradScaler ever steps, although torch's CPU fp16 autocast exists.
    The test pins that: should accelerate start autocasting fp16 on CPU, the probe sees it and
    this test is to be turned into the positive one."""
    run = probed_run(tmp_path, e2e_env, tiny_assets, "autocast", method="lora", dtype="fp16",
                     learning_rate=1e-2)
    assert "fp16: true" in run.sft and "dtype: float16" in run.sft
    assert "use_cpu: true" in run.sft and "use_peft: true" in run.sft
    assert "mixed_precision: fp16" in run.accel
    assert run.seen == [[[False, "torch.bfloat16", "torch.float16"],
                         [False, "torch.bfloat16", "torch.float32"]]], run.seen
    assert run.scales == [], run.scales
    assert dtypes(tmp_path / "out" / "adapter_model.safetensors") == {"F32"}
    assert len(run.losses) == 16, run.losses
    # rank-8 adapters on q_proj/v_proj only (B starts at zero): a smaller fall than a full
    # fine-tune's over 16 steps (about 5.74 to 5.60 with seed 42)
    assert sum(run.losses[-4:]) / 4 < sum(run.losses[:4]) / 4 - 0.08, run.losses
