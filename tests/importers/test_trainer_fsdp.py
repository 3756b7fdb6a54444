"""transformers' own ``fsdp`` / ``fsdp_config`` keys (TRL and LLaMA-Factory configs) shard the
imported run as the source run shards.

Both sides end in accelerate's own ``FullyShardedDataParallelPlugin``, the object that wraps
the model:

- the compiled run: ``accelerate.yaml`` read by accelerate's launch parser and config loader
  (``launch_command_parser`` + ``_validate_launch_command``), turned into the ``FSDP_*``
  environment by accelerate's ``prepare_multi_gpu_env``, and the plugin built from that
  environment, as ``accelerate launch`` does for ``trl sft``;
- a TRL source (transformers 5.24, installed): the installed ``TrainingArguments`` parses the
  keys and the plugin is built from its ``fsdp_plugin_args``, as the Trainer does;
- a LLaMA-Factory source (transformers 4.57.1, not installable beside 5.x): the ``FSDP_*``
  environment 4.57.1's ``TrainingArguments.__post_init__`` exports (:func:`_env_4`, read from
  its ``training_args.py``), the plugin built from it, then the two keys its Trainer copies
  from ``fsdp_config`` onto the plugin (``limit_all_gathers``, ``activation_checkpointing``).

The plugin looks up the current CUDA device when it syncs module states; this machine has
none, so that one lookup is answered with device 0 (it decides no compared value).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.base import Imported
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.trl import import_trl
from helpers.trl_parse import compiled_files, trl_reads

pytest.importorskip("accelerate")
pytest.importorskip("trl")

CORPUS = Path(__file__).parent / "corpus"
FP8 = CORPUS / "llamafactory" / "examples/extras/fp8/llama3_fp8_fsdp_sft.yaml"
LF = ("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\ndo_train: true\n"
      "finetuning_type: full\ndataset: alpaca_en_demo\ntemplate: llama3\nbf16: true\n"
      "report_to: none\noutput_dir: out\n")
TRL = ("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/Capybara\n"
       "bf16: true\nreport_to: none\noutput_dir: out\n")
LF_CASES = {
    "auto-wrap-prefixed": "fsdp: full_shard auto_wrap\nfsdp_config:\n"
    "  fsdp_backward_prefetch: backward_pre\n  fsdp_forward_prefetch: true\n"
    "  fsdp_use_orig_params: false\n  fsdp_cpu_ram_efficient_loading: true\n"
    "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n",
    "offload-grad-op": "fsdp: shard_grad_op offload\n",
    "size-wrap": "fsdp: [hybrid_shard, auto_wrap]\nfsdp_min_num_params: 2000000\n"
    "fsdp_config:\n  limit_all_gathers: true\n  activation_checkpointing: true\n",
    "no-wrap-version-ignored": "fsdp: full_shard\nfsdp_config:\n  fsdp_version: 2\n"
    "  state_dict_type: SHARDED_STATE_DICT\n",
}
"""LLaMA-Factory FSDP settings over :data:`LF` (keys with and without the ``fsdp_`` prefix,
the deprecated top-level keys, keys 4.57.1 does not read)."""
TRL_CASES = {
    "true": "fsdp: true\n",
    "full-shard-auto-wrap": "fsdp: full_shard auto_wrap\nfsdp_config:\n"
    "  activation_checkpointing: true\n  transformer_layer_cls_to_wrap: [Qwen2DecoderLayer]\n",
    "grad-op-offload": "fsdp: shard_grad_op offload\nfsdp_config:\n"
    "  cpu_ram_efficient_loading: true\n  state_dict_type: SHARDED_STATE_DICT\n",
    "fsdp1": "fsdp: [full_shard, auto_wrap]\nfsdp_config:\n  version: 1\n"
    "  backward_prefetch: backward_post\n  forward_prefetch: true\n  sync_module_states: true\n",
    "fsdp1-size": "fsdp: hybrid_shard\nfsdp_config:\n  fsdp_version: 1\n"
    "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 1000000\n",
    "no-reshard": "fsdp: true\nfsdp_config:\n  reshard_after_forward: false\n"
    "  auto_wrap_policy: NO_WRAP\n",
}
"""TRL ``fsdp`` settings over :data:`TRL` (transformers 5's FSDP2 default, FSDP1, policies)."""


@pytest.fixture
def env() -> Iterator[None]:
    """A clean ``FSDP_*`` environment per plugin (the code under test writes os.environ)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def one_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import accelerate.utils.dataclasses as dc
    import torch

    monkeypatch.setattr(dc, "is_cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


def _plugin(environ: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    """What accelerate's plugin wraps with, built under ``environ`` (FSDP_* only)."""
    from accelerate.utils import FullyShardedDataParallelPlugin

    for key in [k for k in os.environ if k.startswith(("FSDP_", "ACCELERATE_"))]:
        del os.environ[key]
    os.environ.update(environ)
    p = FullyShardedDataParallelPlugin(**kwargs)
    wrap = getattr(p.auto_wrap_policy, "__name__", p.auto_wrap_policy)
    out = {
        "version": p.fsdp_version,
        "sharding": str(p.reshard_after_forward if p.fsdp_version == 2
                        else p.sharding_strategy or p.reshard_after_forward),
        "offload": bool(getattr(p.cpu_offload, "offload_params", False)
                        or type(p.cpu_offload).__name__ == "CPUOffloadPolicy"),
        "wrap": wrap,
        "layers": sorted(p.transformer_cls_names_to_wrap or []) if wrap and "transformer"
        in wrap else None,
        "min_num_params": p.min_num_params if wrap and "size" in wrap else None,
        "backward_prefetch": str(p.backward_prefetch),
        "forward_prefetch": p.forward_prefetch,
        "use_orig_params": p.use_orig_params,
        "sync_module_states": p.sync_module_states,
        "cpu_ram_efficient_loading": p.cpu_ram_efficient_loading,
        "state_dict_type": str(p.state_dict_type),
        "limit_all_gathers": p.limit_all_gathers,
    }
    return out


def _compiled(imported: Imported, name: str) -> tuple[dict[str, Any], bool]:
    """The plugin ``accelerate launch --config_file accelerate.yaml`` builds, and whether the
    run checkpoints activations (FSDP's own, or TRL's flag)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    files = compiled_files(imported.text, name)
    with_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"ftspec-{os.getpid()}-{name}.yaml"
    with_file.write_text(files["accelerate.yaml"])
    try:
        args = launch_command_parser().parse_args(["--config_file", str(with_file), "x.py"])
        _validate_launch_command(args)
    finally:
        with_file.unlink()
    environ = {k: v for k, v in prepare_multi_gpu_env(args).items()
               if k.startswith("FSDP_")}
    plugin = _plugin(environ)
    sft = trl_reads(files["sft.yaml"])[1]
    return plugin, bool(environ.get("FSDP_ACTIVATION_CHECKPOINTING") == "true"
                        or sft.gradient_checkpointing)


def _env_4(cfg: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """transformers 4.57.1's ``FSDP_*`` exports for a LLaMA-Factory mapping (``fsdp``,
    ``fsdp_config`` inline, the top-level ``fsdp_min_num_params`` /
    ``fsdp_transformer_layer_cls_to_wrap``), and what its Trainer sets on the plugin after."""
    fsdp = cfg["fsdp"]
    items = fsdp.split() if isinstance(fsdp, str) else list(fsdp)
    conf = {k.removeprefix("fsdp_"): v for k, v in (cfg.get("fsdp_config") or {}).items()}
    min_params = max(conf.get("min_num_params", 0), cfg.get("fsdp_min_num_params", 0))
    layers = conf.get("transformer_layer_cls_to_wrap")
    layers = [layers] if isinstance(layers, str) else layers
    if cfg.get("fsdp_transformer_layer_cls_to_wrap"):
        layers = (layers or []) + [cfg["fsdp_transformer_layer_cls_to_wrap"]]
    names = ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"]
    env = {"ACCELERATE_USE_FSDP": "true"}
    for item in items:
        if item.upper() in names:
            env["FSDP_SHARDING_STRATEGY"] = str(names.index(item.upper()) + 1)
        elif item == "offload":
            env["FSDP_OFFLOAD_PARAMS"] = "true"
        elif item == "auto_wrap":
            env["FSDP_AUTO_WRAP_POLICY"] = "TRANSFORMER_BASED_WRAP"
            if min_params > 0:
                env["FSDP_MIN_NUM_PARAMS"] = str(min_params)
                env["FSDP_AUTO_WRAP_POLICY"] = "SIZE_BASED_WRAP"
            elif layers:
                env["FSDP_TRANSFORMER_CLS_TO_WRAP"] = ",".join(layers)
    env["FSDP_BACKWARD_PREFETCH"] = str(conf.get("backward_prefetch", "NO_PREFETCH")).upper()
    env["FSDP_FORWARD_PREFETCH"] = str(conf.get("forward_prefetch", "false")).lower()
    env["FSDP_SYNC_MODULE_STATES"] = str(conf.get("sync_module_states", "true")).lower()
    env["FSDP_CPU_RAM_EFFICIENT_LOADING"] = str(conf.get("cpu_ram_efficient_loading",
                                                         "false")).lower()
    env["FSDP_USE_ORIG_PARAMS"] = str(conf.get("use_orig_params", "true")).lower()
    after = {k: conf[k] for k in ("limit_all_gathers", "activation_checkpointing")
             if k in conf}
    return env, after


ARCHITECTURES = {"Qwen/Qwen2.5-0.5B": "Qwen2ForCausalLM",
                 "meta-llama/Meta-Llama-3-8B-Instruct": "LlamaForCausalLM"}
"""The test models' transformers classes (their checkpoints' config.json architectures)."""


def _wrapped_layers(plugin: dict[str, Any], model: str) -> dict[str, Any]:
    """With no layer class named, accelerate wraps the model's ``_no_split_modules`` when
    it prepares the model (``fsdp_utils``): the installed transformers class says which."""
    import transformers

    if plugin["wrap"] == "transformer_auto_wrap_policy" and not plugin["layers"]:
        cls = getattr(transformers, ARCHITECTURES[model])
        plugin["layers"] = sorted(cls._no_split_modules)
    return plugin


def _lf_source(cfg: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    env, after = _env_4(cfg)
    plugin = _wrapped_layers(_plugin(env), cfg["model_name_or_path"])
    plugin["limit_all_gathers"] = after.get("limit_all_gathers", plugin["limit_all_gathers"])
    # LLaMA-Factory checkpoints the model's activations unless told not to
    checkpointing = bool(after.get("activation_checkpointing")) or not cfg.get(
        "disable_gradient_checkpointing", False)
    return plugin, checkpointing


def _trl_source(text: str, tmp: Path) -> tuple[dict[str, Any], bool]:
    from ruamel.yaml import YAML
    from transformers import TrainingArguments

    raw = YAML(typ="safe").load(text)
    args = TrainingArguments(output_dir=str(tmp), use_cpu=True, fsdp=raw["fsdp"],
                             fsdp_config=raw.get("fsdp_config"))
    kwargs = dict(args.fsdp_plugin_args)
    plugin = _wrapped_layers(_plugin({}, **kwargs), raw["model_name_or_path"])
    # TRL's SFTConfig turns gradient checkpointing on by default
    checkpointing = bool(kwargs.get("activation_checkpointing")) or raw.get(
        "gradient_checkpointing", True)
    return plugin, checkpointing


def test_llamafactory_fp8_example_shards_as_its_source(env: None) -> None:
    from ruamel.yaml import YAML

    imported = import_llamafactory(FP8)
    assert _compiled(imported, FP8.name) == _lf_source(YAML(typ="safe").load(FP8.read_text()))
    assert [w.summary for w in imported.warnings if w.path and w.path[0].startswith("fsdp")
            and "names no process count" not in w.summary] == []


@pytest.mark.parametrize("case", sorted(LF_CASES))
def test_llamafactory_fsdp_keys_shard_as_transformers_4(case: str, tmp_path: Path,
                                                        env: None) -> None:
    from ruamel.yaml import YAML

    cfg = tmp_path / f"{case}.yaml"
    cfg.write_text(LF + LF_CASES[case])
    imported = import_llamafactory(cfg, nproc=4)
    source = YAML(typ="safe").load(cfg.read_text())
    assert _compiled(imported, case) == _lf_source(source)


@pytest.mark.parametrize("case", sorted(TRL_CASES))
def test_trl_fsdp_keys_shard_as_the_installed_transformers(case: str, tmp_path: Path,
                                                           env: None) -> None:
    cfg = tmp_path / f"{case}.yaml"
    cfg.write_text(TRL + TRL_CASES[case])
    imported = import_trl(cfg, nproc=4)
    assert _compiled(imported, case) == _trl_source(cfg.read_text(), tmp_path)


def test_keys_the_release_ignores_are_warned_at_their_line(tmp_path: Path) -> None:
    cfg = tmp_path / "lf.yaml"
    cfg.write_text(LF + LF_CASES["no-wrap-version-ignored"])
    warned = {w.span.line: w.summary for w in import_llamafactory(cfg, nproc=2).warnings
              if w.span and w.path and w.path[0] == "fsdp_config"}
    assert "transformers 4.57.1 does not read it" in warned[12]  # fsdp_version: 2
    assert "transformers 4.57.1 does not read it" in warned[13]  # state_dict_type
    cfg = tmp_path / "trl.yaml"
    cfg.write_text(TRL + "fsdp: full_shard\nfsdp_config:\n  fsdp_offload_params: true\n"
                   "  limit_all_gathers: false\n  version: 1\n"
                   "fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer\n")
    warned = {w.span.line: w.summary for w in import_trl(cfg, nproc=2).warnings if w.span}
    assert "does not read this key" in warned[8] and "cpu_offload" in warned[8]
    assert "limit_all_gathers false" in warned[9]
    assert "not read by transformers 5.24.0" in warned[11]


def test_fsdp_config_from_a_json_file(tmp_path: Path, env: None) -> None:
    (tmp_path / "fsdp.json").write_text('{"fsdp_version": 1, "backward_prefetch": '
                                        '"backward_pre", "cpu_ram_efficient_loading": true}')
    cfg = tmp_path / "trl.yaml"
    cfg.write_text(TRL + "fsdp: full_shard auto_wrap\nfsdp_config: fsdp.json\n")
    imported = import_trl(cfg, nproc=2)
    fsdp = imported.data["distributed"]["fsdp"]
    assert (fsdp["version"], fsdp["backward_prefetch"], fsdp["cpu_ram_efficient_loading"]) \
        == (1, "backward_pre", True)
    assert "(fsdp.json: backward_prefetch)" in imported.text
    cfg.write_text(TRL + "fsdp: full_shard\nfsdp_config: missing.json\n")
    (warning,) = [w for w in import_trl(cfg, nproc=2).warnings if w.path == ("fsdp_config",)]
    assert "not a JSON file readable here" in warning.summary


def test_trl_deepspeed_key_reads_the_json(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 3, "offload_param": '
                                      '{"device": "cpu"}}, "bf16": {"enabled": "auto"}}')
    cfg = tmp_path / "trl.yaml"
    cfg.write_text(TRL + "deepspeed: ds.json\n")
    imported = import_trl(cfg, nproc=2)
    assert imported.data["distributed"]["strategy"] == "deepspeed"
    assert imported.data["distributed"]["deepspeed"] == {"stage": 3, "offload_params": "cpu"}
    assert not [w for w in imported.warnings if w.path == ("deepspeed",)]
    cfg.write_text(TRL + "deepspeed: elsewhere/ds.json\n")
    (warning,) = [w for w in import_trl(cfg, nproc=2).warnings if w.path == ("deepspeed",)]
    assert "not readable here and TRL ships none" in warning.summary
