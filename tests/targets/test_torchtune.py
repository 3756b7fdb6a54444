"""torchtune target: override keys exist in the base config (or are documented additions),
and the resolved config loads with torchtune's own loader."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.targets.torchtune import ADDITIONS, plan_run
from ftspec.targets.torchtune_configs import Remove, has_path, load_config
from helpers.examples import EXAMPLES, applicable, example_job

TT = [e for e in EXAMPLES if "torchtune" in applicable(example_job(e))]


@pytest.mark.parametrize("example", TT, ids=[e.stem for e in TT])
def test_override_keys_exist_or_are_additions(example: Path) -> None:
    job = example_job(example)
    run = plan_run(job)
    base = load_config(run.config)
    for op in run.overrides:
        if isinstance(op, Remove):
            assert has_path(base, op.key), op.key
            continue
        if op.key.endswith("._component_"):
            continue
        replaced = any(isinstance(o, Remove) or o.key == op.key.split(".")[0] + "._component_"
                       for o in run.overrides if o.key.split(".")[0] == op.key.split(".")[0])
        assert has_path(base, op.key) or op.key in ADDITIONS or replaced, \
            f"{op.key} is neither in {run.config} nor in ADDITIONS"
        assert "=" not in str(op.cli()).split("=", 1)[1], f"{op.key}: '=' in a CLI value"


@pytest.mark.slow
@pytest.mark.parametrize("example", TT, ids=[e.stem for e in TT])
def test_resolved_config_loads_with_torchtune(example: Path, tmp_path: Path) -> None:
    """torchtune's parse path: OmegaConf load + CLI-style merge, then import every component."""
    from argparse import Namespace

    from omegaconf import OmegaConf
    from torchtune.config._utils import _get_component_from_path, _merge_yaml_and_cli_args

    job = example_job(example)
    run = plan_run(job)
    from ftspec.targets.torchtune import launch

    cfg_file = tmp_path / "config.yaml"
    cfg_file.write_text(launch(job).files["config.yaml"])
    conf = OmegaConf.load(cfg_file)
    assert OmegaConf.to_container(conf, resolve=True)["output_dir"] == run.resolved["output_dir"]
    # the base config + CLI overrides give the same config as the resolved file
    from ftspec.targets.torchtune_configs import configs_dir

    base = OmegaConf.to_container(OmegaConf.load(configs_dir() / f"{run.config}.yaml"))
    merged = _merge_yaml_and_cli_args(Namespace(**base), run.override_args())
    assert OmegaConf.to_container(merged) == OmegaConf.to_container(conf)
    for node in OmegaConf.to_container(conf).values():
        if isinstance(node, dict) and "_component_" in node:
            _get_component_from_path(node["_component_"])


def _full_1b(training: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "f"},
            "model": {"uri": "hf://meta-llama/Llama-3.2-1B", "family": "llama3_2-1b",
                      "dtype": "bf16"},
            "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "format": "alpaca"}},
            "method": {"kind": "full"},
            "training": {"global_batch_size": 4, "micro_batch_size": 4, "learning_rate": 2e-5,
                         **training},
            "resources": {"gpus_per_node": 1, "accelerator": "nvidia-h100-80gb"},
            "output": {"uri": "file:///tmp/out"}, "launcher": "torchtune",
            "deploy": {"target": "local"}}


@pytest.mark.parametrize(("training", "in_bwd", "clip"), [
    ({}, False, 1.0),                                          # the default clipping
    ({"max_grad_norm": None}, True, None),                     # the shipped config's way
    ({"max_grad_norm": None, "gradient_accumulation_steps": 2, "global_batch_size": 8},
     False, None),
])
def test_optimizer_in_backward_only_where_the_recipe_accepts_it(
        training: dict[str, object], in_bwd: bool, clip: float | None) -> None:
    """llama3_2/1B_full_single_device steps the optimizer in backward; torchtune's recipe
    refuses that with clip_grad_norm or gradient accumulation (seen on a GPU run)."""
    from ftspec.compiler.build import build_job
    from ftspec.spec.validate import spec_from_data

    run = plan_run(build_job(spec_from_data(_full_1b(training))))
    assert run.config == "llama3_2/1B_full_single_device"
    assert load_config(run.config)["optimizer_in_bwd"] is True
    assert run.resolved["optimizer_in_bwd"] is in_bwd
    assert run.resolved["clip_grad_norm"] == clip
