"""Readers for the platform targets: find the launcher run each platform would start,
then read it with the launcher's own reader.

- kubeflow (torchtune runtime): recompute what the Trainer controller runs — recipe and
  config from the runtime's name and the LoRA/QLoRA args (the controller's selection table),
  the base config shipped with the installed torchtune, the args applied as torchtune's CLI
  applies them — then read that config.
- kubeflow (generated accelerate runtime): the ConfigMap's files and the runtime's command.
- kuberay / ray: the files carried base64-encoded in the runtime env and the entrypoint's
  launcher command (multi-node: the driver plan's command, as node 0 runs it).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import shlex
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from helpers.readback import read_accelerate, read_fms_hf_tuning, read_torchtune

_YAML = YAML(typ="safe", pure=True)


def _base_config(name: str) -> dict[str, Any]:
    spec = importlib.util.find_spec("recipes")
    assert spec is not None and spec.submodule_search_locations, "torchtune is not installed"
    path = Path(next(iter(spec.submodule_search_locations))) / "configs" / f"{name}.yaml"
    data: dict[str, Any] = _YAML.load(path.read_text(encoding="utf-8"))
    return data


def _apply_arg(cfg: dict[str, Any], arg: str) -> None:
    """``key=value`` the way torchtune's CLI reads it (OmegaConf dotlist; a bare component
    name on a component node sets its ``_component_``)."""
    from omegaconf import OmegaConf

    key, _, raw = arg.partition("=")
    if key.startswith("~"):
        node = cfg
        *parents, last = key[1:].split(".")
        for part in parents:
            node = node[part]
        node.pop(last, None)
        return
    node = cfg
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    value = OmegaConf.to_container(OmegaConf.from_dotlist([f"v={raw}"]))["v"]
    current = node.get(parts[-1])
    if isinstance(current, dict) and "_component_" in current and isinstance(value, str):
        current["_component_"] = value
    else:
        node[parts[-1]] = value


def _controller_choice(runtime: str, args: list[str], nodes: int, procs: int) -> tuple[str, str]:
    """Recipe and config the torchtune runtime's controller picks (notes §3.3)."""
    model = runtime.removeprefix("torchtune-")
    family, size = model.rsplit("-", 1)
    prefix = f"{family.replace('.', '_')}/{size.upper()}"
    lora = any(a.startswith("model.lora_attn_modules") for a in args)
    qlora = "model.quantize_base=True" in args and "model.use_dora=True" not in args
    single = nodes == 1 and procs == 1
    if not lora:
        recipe = "full_finetune_single_device" if single else "full_finetune_distributed"
        suffix = "_full_single_device" if single else "_full" if nodes == 1 else "_full_multinode"
    else:
        recipe = "lora_finetune_single_device" if single else "lora_finetune_distributed"
        kind = "_qlora" if qlora else "_lora"
        suffix = kind + ("_single_device" if single else "")
    return recipe, prefix + suffix


def read_kubeflow(files: dict[str, str]) -> dict[str, Any]:
    trainjob = _YAML.load(files["trainjob.yaml"])
    trainer = trainjob["spec"]["trainer"]
    if "configmap.yaml" in files:
        configmap = _YAML.load(files["configmap.yaml"])
        runtime = _YAML.load(files["trainingruntime.yaml"])
        jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        node = next(j for j in jobs if j["name"] == "node")
        container = next(c for c in node["template"]["spec"]["template"]["spec"]["containers"]
                         if c["name"] == "node")
        argv = list(trainer.get("command") or container.get("command") or [])
        argv += list(trainer.get("args") or container.get("args") or [])
        launched = dict(configmap["data"])
        launched["command.sh"] = "exec " + shlex.join(_launcher_argv(argv))
        return _read_launched(launched)
    assert trainer["command"] == ["tune", "run"], "only the torchtune runtime form is read here"
    args = [str(a) for a in trainer["args"]]
    nodes, procs = int(trainer.get("numNodes", 1)), int(trainer.get("numProcPerNode", 1))
    recipe, config = _controller_choice(trainjob["spec"]["runtimeRef"]["name"], args, nodes, procs)
    cfg = _base_config(config)
    for arg in args:
        _apply_arg(cfg, arg)
    flags = "" if nodes == procs == 1 else f"--nnodes {nodes} --nproc-per-node {procs} "
    from io import StringIO

    out = StringIO()
    _YAML.dump(cfg, out)
    return read_torchtune({"config.yaml": out.getvalue(),
                           "command.sh": f"exec tune run {flags}{recipe} --config cfg.yaml"})


def _launcher_argv(argv: list[str]) -> list[str]:
    """The launcher's own argv inside a shell wrapper (``sh -c '… && accelerate launch …'``)."""
    text = " ".join(argv)
    for launcher in ("accelerate launch", "tune run"):
        at = text.rfind(launcher)
        if at >= 0:
            return shlex.split(text[at:])
    raise AssertionError(f"no launcher command in {argv}")


def _ray_files(entrypoint: str, env_vars: dict[str, str]) -> dict[str, str]:
    files: dict[str, str] = json.loads(base64.b64decode(env_vars["FTSPEC_FILES"]))
    run_dir = env_vars.get("FTSPEC_RUN_DIR", "")
    if "FTSPEC_NODES" in env_vars:  # multi-node: the driver runs the plan's argv per node
        from ftspec.runtime.ray_nodes.wire import decode_plan, fill

        argv = fill(decode_plan(env_vars["FTSPEC_NODES"])["argv"], 0, "10.0.0.1", 29500)
    else:
        argv = _launcher_argv(shlex.split(entrypoint.rsplit("&&", 1)[-1]))
    files["command.sh"] = "exec " + shlex.join(argv).replace(run_dir + "/", "")
    return files


def _read_launched(files: dict[str, str]) -> dict[str, Any]:
    if "config.yaml" in files:
        return read_torchtune(files)
    return read_accelerate(files) if "sft.yaml" in files else read_fms_hf_tuning(files)


def read_ray(files: dict[str, str]) -> dict[str, Any]:
    body = json.loads(files["submission.json"])
    return _read_launched(_ray_files(body["entrypoint"], body["runtime_env"]["env_vars"]))


def read_kuberay(files: dict[str, str]) -> dict[str, Any]:
    rayjob = _YAML.load(files["rayjob.yaml"])
    env = _YAML.load(rayjob["spec"]["runtimeEnvYAML"])
    return _read_launched(_ray_files(rayjob["spec"]["entrypoint"], env["env_vars"]))
