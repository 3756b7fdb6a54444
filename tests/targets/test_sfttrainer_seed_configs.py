"""The SFTTrainer actuator's experiments as example specs: each compiled accelerate config
equals the seed's accelerate_config.yml key by key, but for the differences listed here with
why each is the same run (or why ftspec's is the one that runs as the seed means).

The seed's two configs (FSDP, DDP) are transcribed verbatim in ``data/sfttrainer_seed/`` with
their placeholders; each case fills them with the values of the actuator's entity space the
example reproduces. Both files are read by accelerate's own config loader (PyYAML, YAML 1.1,
missing keys at accelerate's defaults), so a key is compared as `accelerate launch` reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.spec.ir import Job
from ftspec.targets import get_target

ROOT = Path(__file__).resolve().parents[2]
SEED = Path(__file__).parent / "data" / "sfttrainer_seed"
ABSENT = "(absent)"

SOME_PORT = "{ $SOME_PORT }"
FILLS_FSDP = {
    "{ $THE MACHINE RANK - always 0 for single-node runs }": "0",
    "${fsdp_sharding_strategy}": "FULL_SHARD",          # the actuator's default
    "${fsdp_state_dict_type}": "FULL_STATE_DICT",       # the actuator's default
    "${accelerate_config_mixed_precision}": '"no"',     # the actuator's default
}

CASES: dict[str, tuple[str, dict[str, str]]] = {
    # example -> (seed config, placeholders filled as the example's entity-space point)
    "sfttrainer-full-benchmark.yaml": ("fsdp", {
        **FILLS_FSDP, "{ $NUM_GPUS }": "4",
        "${accelerate_config_fsdp_transformer_layer_cls_to_wrap}": "GraniteDecoderLayer"}),
    "sfttrainer-pt-benchmark.yaml": ("fsdp", {
        **FILLS_FSDP, "{ $NUM_GPUS }": "4",
        "${accelerate_config_fsdp_transformer_layer_cls_to_wrap}": "LlamaDecoderLayer"}),
    "sfttrainer-gptq-lora-benchmark.yaml": ("fsdp", {
        **FILLS_FSDP, "{ $NUM_GPUS }": "2",
        "${accelerate_config_fsdp_transformer_layer_cls_to_wrap}": "MistralDecoderLayer"}),
    "sfttrainer-vision-benchmark.yaml": ("fsdp", {  # granite-vision-3.2-2b's decoder layers
        **FILLS_FSDP, "{ $NUM_GPUS }": "4",
        "${accelerate_config_fsdp_transformer_layer_cls_to_wrap}": "GraniteDecoderLayer"}),
    "sfttrainer-lora-benchmark.yaml": ("ddp", {
        "{ $THE MACHINE RANK - always 0 for single-node runs }": "0",
        "${accelerate_config_mixed_precision}": '"no"', "{ $NUM_GPUS }": "2"}),
}

DIFFERENCES: dict[str, tuple[Any, Any, str]] = {
    # key -> (the seed's value, ftspec's value, why it is the same run)
    "main_process_port": (
        "SOME_PORT", ABSENT,
        ("the actuator picks a free port per measurement because several share a Ray worker; "
        "ftspec's one-machine run leaves it to accelerate (29500), and a multi-node run gets "
        "the port from its platform (deploy.*)")),
    "fsdp_config.fsdp_reshard_after_forward": (
        ABSENT, "FULL_SHARD",
        ("accelerate >= 1.6 names FSDP1's sharding strategy fsdp_reshard_after_forward too; "
        "written beside fsdp_sharding_strategy with the same value")),
    "fsdp_config.fsdp_activation_checkpointing": (
        ABSENT, True,
        ("the seed checkpoints activations in the trainer (--gradient_checkpointing True); "
        "under FSDP ftspec has accelerate's FSDP checkpoint each wrapped decoder layer instead "
        "(sft.yaml: gradient_checkpointing: false), so the same recomputation runs once")),
    "fsdp_config.fsdp_use_orig_params": (
        ABSENT, True,
        ("the actuator's fsdp_use_orig_params (default True) is a parameter of its own, not in "
        "the file; `accelerate launch` defaults it to true as well, ftspec writes it")),
    "fsdp_config.fsdp_version": (
        ABSENT, 1, "accelerate's default FSDP version is 1, the one the seed's keys configure"),
}
"""Keys whose values differ, the same for every case of its config kind."""

GPTQ_MIXED = ("no", "fp16",
              ("the seed passes --fp16 true to the trainer, which builds its Accelerator with "
              "mixed_precision fp16 whatever the file says (transformers' Trainer); ftspec "
              "writes fp16 where accelerate reads it, so both autocast to fp16"))
DDP_DOWNCAST = (False, "no",
                ("the seed's bare `no` is YAML 1.1's false; ftspec writes the string accelerate's "
                "own `accelerate config` writes. Either means no bf16 downcast, a setting "
                "read on TPUs only"))


def _flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _loaded(path: Path) -> dict[str, Any]:
    from accelerate.commands.config.config_args import load_config_from_file

    return _flatten(load_config_from_file(str(path)).to_dict())


def _job(example: str) -> Job:
    result = compile_spec(SpecInput(ROOT / "examples" / example, (), ()), "accelerate")
    assert result.ok and result.job is not None, [d.format() for d in result.diagnostics]
    return result.job


def _seed(kind: str, fills: dict[str, str], tmp: Path) -> Path:
    text = (SEED / f"{kind}_accelerate_config.yml").read_text()
    for placeholder, value in {**fills, SOME_PORT: "SOME_PORT"}.items():
        assert placeholder in text, placeholder
        text = text.replace(placeholder, value)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert "$" not in body, body  # every placeholder filled
    path = tmp / f"seed-{kind}.yml"
    path.write_text(text)
    return path


def _expected_differences(example: str, kind: str) -> dict[str, tuple[Any, Any, str]]:
    if kind == "ddp":
        return {"main_process_port": DIFFERENCES["main_process_port"],
                "downcast_bf16": DDP_DOWNCAST}
    out = dict(DIFFERENCES)
    if "gptq" in example:
        out["mixed_precision"] = GPTQ_MIXED
    return out


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(CASES))
def test_compiled_config_is_the_seeds_key_by_key(example: str, tmp_path: Path) -> None:
    kind, fills = CASES[example]
    seed = _loaded(_seed(kind, fills, tmp_path))
    files = {a.path: a.content for a in get_target("accelerate").compile(_job(example))}
    ours_path = tmp_path / "accelerate.yaml"
    ours_path.write_text(files["accelerate.yaml"])
    ours = _loaded(ours_path)
    differences = _expected_differences(example, kind)
    for key in sorted(set(seed) | set(ours)):
        got = (seed.get(key, ABSENT), ours.get(key, ABSENT))
        if key in differences:
            want = differences[key][:2]
            assert got == want, f"{key}: documented as {want}, now {got}"
        else:
            assert got[0] == got[1], f"{key}: the seed has {got[0]!r}, ftspec {got[1]!r}"


@pytest.mark.slow
def test_fsdp1_sharding_reaches_accelerate_launch(tmp_path: Path) -> None:
    """`accelerate launch` exports FSDP_SHARDING_STRATEGY from fsdp_sharding_strategy (its
    default FULL_SHARD when the key is absent), and FSDP1 reads it before
    fsdp_reshard_after_forward: the compiled file must carry the spec's strategy there."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    d = yaml.safe_load((ROOT / "examples" / "sfttrainer-full-benchmark.yaml").read_text())
    d["distributed"]["fsdp"]["sharding"] = "shard_grad_op"
    spec = tmp_path / "sgo.yaml"
    spec.write_text(yaml.safe_dump(d))
    result = compile_spec(SpecInput(spec, (), ()), "accelerate")
    assert result.job is not None
    files = {a.path: a.content for a in get_target("accelerate").compile(result.job)}
    config = tmp_path / "accelerate.yaml"
    config.write_text(files["accelerate.yaml"])
    args = launch_command_parser().parse_args(["--config_file", str(config), "train.py"])
    args, *_ = _validate_launch_command(args)
    assert prepare_multi_gpu_env(args)["FSDP_SHARDING_STRATEGY"] == "SHARD_GRAD_OP"
