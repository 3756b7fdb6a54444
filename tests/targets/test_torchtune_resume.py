"""training.checkpointing.resume_from on the torchtune launcher, at compile time: the keys
torchtune 0.6.1's recipes and checkpointer read to resume (``resume_from_checkpoint``, the
checkpointer's ``adapter_checkpoint`` and ``recipe_checkpoint``, joined by torchtune to the new
run's ``output_dir``), the recipe that runs it, torchtune's own config loader over the compiled
file, and the cases refused at the field's line. The run itself: tests/e2e/test_torchtune_resume.py.
"""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.diagnostics import format_path
from ftspec.spec.loader import parse_yaml
from ftspec.targets.torchtune import launch, plan_run
from ftspec.targets.torchtune_configs import configs_dir
from ftspec.targets.torchtune_resume import SHIM_RECIPE
from helpers.jobs import make_job, spec_data

WHERE = "training.checkpointing.resume_from"
LOCAL = {"deploy": {"target": "local"}, "resources": {"gpus_per_node": 1},
         "data": {"train": {"uri": "file:///data/alpaca.jsonl", "format": "alpaca"}},
         "output": {"uri": "file:///runs/b"}}


def _resume(resume_from: str, **change: Any) -> dict[str, Any]:
    out = {**LOCAL, **change}
    out["training"] = {**change.get("training", {}),
                       "checkpointing": {"resume_from": resume_from}}
    return out


@pytest.mark.parametrize(("resume_from", "output", "adapter", "state", "folder"), [
    ("file:///runs/a/epoch_0", "file:///runs/b", "/runs/a/epoch_0/adapter_model.pt",
     "/runs/a/recipe_state/recipe_state.pt", "/runs/a/epoch_0"),
    ("/runs/a/epoch_0/", "file:///runs/b", "/runs/a/epoch_0/adapter_model.pt",
     "/runs/a/recipe_state/recipe_state.pt", "/runs/a/epoch_0"),
    # relative to the launcher's working directory: written relative to output_dir, which
    # torchtune joins them to
    ("file://.ftspec/runs/a/output/epoch_1", "file://.ftspec/runs/b/output",
     "../../a/output/epoch_1/adapter_model.pt", "../../a/output/recipe_state/recipe_state.pt",
     ".ftspec/runs/a/output/epoch_1"),
    ("pvc://ckpts/a/epoch_2", "file:///runs/b", "/mnt/ckpts/a/epoch_2/adapter_model.pt",
     "/mnt/ckpts/a/recipe_state/recipe_state.pt", "/mnt/ckpts/a/epoch_2"),
], ids=["file-abs", "path-abs", "file-relative", "pvc"])
def test_resume_compiles_torchtunes_own_keys(resume_from: str, output: str, adapter: str,
                                             state: str, folder: str) -> None:
    job = make_job(**_resume(resume_from, output={"uri": output}))
    run = plan_run(job)
    cfg = run.resolved
    assert cfg["resume_from_checkpoint"] is True
    ckpt = cfg["checkpointer"]
    assert ckpt["adapter_checkpoint"] == adapter and ckpt["recipe_checkpoint"] == state
    # what torchtune opens (get_adapter/recipe_checkpoint_path: os.path.join(output_dir, v)),
    # from the launcher's working directory: the epoch folder's adapter, the state beside it
    def opened(value: str) -> str:
        return os.path.normpath(os.path.join(cfg["output_dir"], value))

    assert opened(adapter) == f"{folder}/adapter_model.pt"
    assert opened(state) == f"{os.path.dirname(folder)}/recipe_state/recipe_state.pt"
    # the base weights stay the model's: torchtune reads them from checkpoint_dir on resume
    assert ckpt["checkpoint_dir"] == plan_run(make_job(**LOCAL)).resolved[
        "checkpointer"]["checkpoint_dir"]
    assert run.recipe == SHIM_RECIPE  # one device: the recipe with its step count restored


def test_no_resume_compiles_no_key_and_the_shipped_recipe() -> None:
    run = plan_run(make_job(**LOCAL))
    assert not [a for a in run.override_args()
                if a.split("=")[0] in ("resume_from_checkpoint", "checkpointer.adapter_checkpoint",
                                       "checkpointer.recipe_checkpoint")]
    ckpt = run.resolved["checkpointer"]  # the shipped config's values, which start afresh
    assert not run.resolved.get("resume_from_checkpoint")
    assert ckpt.get("recipe_checkpoint") is None and ckpt.get("adapter_checkpoint") is None
    assert run.recipe == "lora_finetune_single_device"


def test_distributed_resume_runs_the_shipped_distributed_recipe() -> None:
    job = make_job(**_resume("/runs/a/epoch_0", resources={"gpus_per_node": 2}))
    run = plan_run(job)
    assert run.recipe == "lora_finetune_distributed"
    assert run.resolved["resume_from_checkpoint"] is True
    argv = launch(job).argv
    assert argv[:2] == ("tune", "run") and "--nproc-per-node" in argv


def test_the_shim_is_a_module_tune_run_can_run() -> None:
    """``tune run`` turns a custom recipe's path into a dotted module (its own rule)."""
    from torchtune._cli.run import Run

    dotted = Run._convert_to_dotpath(None, SHIM_RECIPE)  # type: ignore[arg-type]
    assert dotted == "ftspec.runtime.torchtune_resume"
    import importlib.util

    assert importlib.util.find_spec(dotted) is not None
    argv = launch(make_job(**_resume("/runs/a/epoch_0"))).argv
    assert argv == ("tune", "run", SHIM_RECIPE, "--config", "config.yaml")


def test_resumed_config_loads_with_torchtunes_loader(tmp_path: Path) -> None:
    """The compiled file through torchtune's parse path, equal to base config + overrides."""
    from omegaconf import OmegaConf
    from torchtune.config._utils import _merge_yaml_and_cli_args

    job = make_job(**_resume("file:///runs/a/epoch_0"))
    run = plan_run(job)
    cfg_file = tmp_path / "config.yaml"
    cfg_file.write_text(launch(job).files["config.yaml"])
    conf = OmegaConf.load(cfg_file)
    assert conf.resume_from_checkpoint is True
    assert conf.checkpointer.recipe_checkpoint == "/runs/a/recipe_state/recipe_state.pt"
    base = OmegaConf.to_container(OmegaConf.load(configs_dir() / f"{run.config}.yaml"))
    merged = _merge_yaml_and_cli_args(Namespace(**base), run.override_args())
    assert OmegaConf.to_container(merged) == OmegaConf.to_container(conf)


def _errors(change: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    compiled = compile_spec(parse_yaml(yaml.safe_dump(spec_data(**change)), "spec.yaml"),
                            "checks")
    return [(d.code, format_path(d.path), d.format().split(": ", 1)[0])
            for d in compiled.errors]


def _line_of(change: dict[str, Any], key: str) -> str:
    text = yaml.safe_dump(spec_data(**change))
    [line] = [i for i, t in enumerate(text.splitlines(), 1) if t.lstrip().startswith(key)]
    return f"spec.yaml:{line}:"


KUBEFLOW_1GPU = {"deploy": {"target": "kubeflow"}, "resources": {"gpus_per_node": 1}}


@pytest.mark.parametrize(("change", "code"), [
    (_resume("s3://bucket/a/epoch_0"), "target.torchtune.resume-scheme"),
    (_resume("hf://acme/a-epoch_0"), "target.torchtune.resume-scheme"),
    (_resume("/runs/a/epoch_0", method={"kind": "full", "lora": None}),
     "target.torchtune.resume-full"),
    (_resume("runs/a/epoch_0"), "target.torchtune.resume-relative"),
    ({**KUBEFLOW_1GPU, "training": {"checkpointing": {
        "resume_from": "pvc://ckpts/a/epoch_0"}}}, "kubeflow.resume-single-device"),
], ids=["s3", "hf", "full", "relative-beside-absolute-output", "kubeflow-single-device"])
def test_what_torchtune_cannot_resume_is_refused_at_its_line(change: dict[str, Any],
                                                             code: str) -> None:
    found = _errors(change)
    assert [f for f in found if f[:2] == (code, WHERE)], found
    assert all(loc.startswith(_line_of(change, "resume_from:")) for c, p, loc in found
               if p == WHERE), found


def test_resume_is_no_longer_a_torchtune_gap() -> None:
    """Before: 'the torchtune target cannot resume from a checkpoint' at resume_from."""
    assert not [f for f in _errors(_resume("/runs/a/epoch_0")) if f[1] == WHERE]
    assert not [f for f in _errors({"deploy": {"target": "kubeflow"}, "training": {
        "checkpointing": {"resume_from": "pvc://ckpts/a/epoch_0"}}}) if f[1] == WHERE]


def test_kubeflow_distributed_resume_passes_the_keys_as_runtime_args() -> None:
    """On 4 GPUs the runtime runs the distributed LoRA recipe, which restores the step; the
    checkpoint's claim is mounted where the args point."""
    from ftspec.targets.kube import pvc_volumes
    from ftspec.targets.kubeflow_torchtune import trainer_args

    job = make_job(training={"checkpointing": {"resume_from": "pvc://ckpts/a/epoch_0"}},
                   output={"uri": "pvc://outputs/b"})
    args = trainer_args(job)
    assert {"resume_from_checkpoint=True",
            "checkpointer.adapter_checkpoint=/mnt/ckpts/a/epoch_0/adapter_model.pt",
            "checkpointer.recipe_checkpoint=/mnt/ckpts/a/recipe_state/recipe_state.pt"
            } <= set(args)
    volumes, mounts = pvc_volumes(job)
    claims = {m["mountPath"]: v["persistentVolumeClaim"]["claimName"]
              for v, m in zip(volumes, mounts, strict=True)}
    assert claims["/mnt/ckpts"] == "ckpts"
