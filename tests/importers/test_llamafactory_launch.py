"""``ftspec import llamafactory``: LLaMA-Factory's launcher conventions (issue 24, topology).

The corpus keeps LLaMA-Factory's own layout (``examples/extras/fsdp_qlora/train.sh`` beside
its YAML, ``examples/accelerate/*.yaml`` named by it), so the lookup runs for real; the FSDP
settings reach the compiled ``accelerate.yaml`` as accelerate's own loader reads both files.
The conventions (``FORCE_TORCHRUN``, ``NPROC_PER_NODE``, ``NNODES``, ``CUDA_VISIBLE_DEVICES``,
``torchrun``, ``deepspeed``) and the untrusted-input rules are checked on small files.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.base import Imported
from ftspec.compiler.importers.launch_accelerate import FSDP_DEFAULTS
from ftspec.compiler.importers.launch_script import FLAGS, commands, usage_commands
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.topology import ASSUMED_GPUS
from helpers.cli_run import run
from helpers.trl_parse import accelerate_reads, compiled_files

pytest.importorskip("accelerate")

CORPUS = Path(__file__).parent / "corpus" / "llamafactory"
PAIRS = {
    "examples/extras/fsdp_qlora/llama3_lora_sft.yaml": "examples/accelerate/fsdp_config.yaml",
    "examples/ascend/qwen3_full_sft_fsdp2.yaml": "examples/accelerate/fsdp2_config.yaml",
}
"""A corpus config -> the accelerate config its launcher names (train.sh / usage comment)."""
YAML = ("model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\ndo_train: true\n"
        "finetuning_type: lora\ndataset: alpaca_en_demo\nbf16: true\nreport_to: none\n"
        "output_dir: out\n")


def _parser_default(dest: str) -> Any:
    from accelerate.commands.launch import launch_command_parser

    return launch_command_parser().get_default(dest)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_launcher_settings_reach_accelerate_yaml(name: str) -> None:
    """Every key the source accelerate config sets (and fsdp_version, whose absence means
    accelerate's 1) is what the compiled accelerate.yaml gives accelerate."""
    imported = import_llamafactory(CORPUS / name)
    source = accelerate_reads((CORPUS / PAIRS[name]).read_text())
    compiled = accelerate_reads(compiled_files(imported.text, Path(name).name)
                                ["accelerate.yaml"])
    for key in ("distributed_type", "num_processes", "num_machines"):
        assert compiled[key] == source[key], key
    want, got = source["fsdp_config"], compiled["fsdp_config"]
    assert int(got["fsdp_version"]) == int(want.get("fsdp_version",
                                                    _parser_default("fsdp_version")))
    for key, value in want.items():
        assert str(got[key]).lower() == str(value).lower(), key
    assert f"{PAIRS[name]}:" in imported.text  # the origin comments name the file


def test_the_script_beside_the_yaml_is_found_and_cited() -> None:
    imported = import_llamafactory(CORPUS / "examples/extras/fsdp_qlora/llama3_lora_sft.yaml")
    assert imported.data["distributed"]["strategy"] == "fsdp"
    assert imported.data["resources"]["gpus_per_node"] == 2
    fsdp = imported.data["distributed"]["fsdp"]
    assert (fsdp["version"], fsdp["sharding"], fsdp["state_dict_type"]) == (1, "full_shard",
                                                                            "full")
    assert "accelerate 1.15's default (fsdp_version not set)" in imported.text
    assert not [w for w in imported.warnings if "names no process count" in w.summary]


def test_accelerate_defaults_are_its_launch_parsers() -> None:
    for key, value in FSDP_DEFAULTS.items():
        default = _parser_default(key)
        if default is not None:
            assert str(default).lower() == str(value).lower(), key


def test_accelerate_flags_are_its_parsers_valueless_options() -> None:
    from accelerate.commands.launch import launch_command_parser

    valueless = {o.lstrip("-").replace("-", "_") for a in launch_command_parser()._actions
                 if a.nargs == 0 or isinstance(a, argparse._StoreTrueAction)
                 for o in a.option_strings}
    assert valueless <= FLAGS["accelerate launch"]


def test_shell_words_lines_and_variables() -> None:
    script = ("#!/bin/bash\nset -x\nexport NNODES=2\nGPUS=0,1,2,3\nN=4\n"
              "CUDA_VISIBLE_DEVICES=$GPUS torchrun \\\n    --nproc_per_node=${N} \\\n"
              "    --nnodes \"$NNODES\" src/train.py 'a b.yaml' && echo done # torchrun x\n")
    (cmd,) = commands(script, "run.sh")
    assert (cmd.launcher, cmd.line) == ("torchrun", 6)
    assert cmd.env["CUDA_VISIBLE_DEVICES"].text == "0,1,2,3"
    assert cmd.env["NNODES"].line == 3
    assert (cmd.options["nproc_per_node"].text, cmd.options["nproc_per_node"].line) == ("4", 7)
    assert (cmd.options["nnodes"].text, cmd.options["nnodes"].line) == ("2", 8)
    assert [w.text for w in cmd.args] == ["src/train.py", "a b.yaml"]


def test_usage_comment_commands() -> None:
    text = ("# accelerate launch \\\n#     --config_file c.yaml \\\n#     src/train.py x.yaml\n"
            "# Don't run it with 'one quote\nmodel_name_or_path: m\n")
    (cmd,) = usage_commands(text, "x.yaml")
    assert cmd.launcher == "accelerate launch" and cmd.options["config_file"].line == 2


def _write(folder: Path, script: str, yaml: str = YAML) -> Path:
    cfg = folder / "x.yaml"
    cfg.write_text(yaml)
    (folder / "run.sh").write_text(script)
    return cfg


def _warned(imported: Imported, text: str) -> list[str]:
    return [f"{w.span}: {w.summary}" for w in imported.warnings if text in w.summary]


def test_llamafactory_cli_environment(tmp_path: Path) -> None:
    cfg = _write(tmp_path, "FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=4 "
                 "llamafactory-cli train x.yaml\n")
    imported = import_llamafactory(cfg)
    res = imported.data["resources"]
    assert (res["gpus_per_node"], res["nodes"]) == (4, 2)
    assert f"gpus_per_node: 4 # from {tmp_path / 'run.sh'}:1 (NPROC_PER_NODE)" in imported.text
    assert f"nodes: 2 # from {tmp_path / 'run.sh'}:1 (NNODES)" in imported.text
    cfg = _write(tmp_path, "CUDA_VISIBLE_DEVICES=0,1,2 llamafactory-cli train x.yaml\n")
    assert import_llamafactory(cfg).data["resources"]["gpus_per_node"] == 3
    cfg = _write(tmp_path, "FORCE_TORCHRUN=1 llamafactory-cli train x.yaml\n")
    imported = import_llamafactory(cfg)
    assert imported.data["resources"]["gpus_per_node"] == ASSUMED_GPUS
    (warning,) = _warned(imported, "FORCE_TORCHRUN")
    assert warning.startswith(f"{tmp_path / 'run.sh'}:1:1: FORCE_TORCHRUN: llamafactory-cli")
    assert f"{ASSUMED_GPUS} assumed)" in imported.text


def test_torchrun_and_deepspeed_counts(tmp_path: Path) -> None:
    cfg = _write(tmp_path, "torchrun --nproc-per-node 4 --nnodes 2 src/train.py x.yaml\n")
    res = import_llamafactory(cfg).data["resources"]
    assert (res["gpus_per_node"], res["nodes"]) == (4, 2)
    cfg = _write(tmp_path, "deepspeed --num_gpus 2 src/train.py x.yaml\n")
    assert import_llamafactory(cfg).data["resources"]["gpus_per_node"] == 2
    cfg = _write(tmp_path, "torchrun src/train.py x.yaml\n")  # torchrun's default: 1
    imported = import_llamafactory(cfg)
    assert imported.data["resources"]["gpus_per_node"] == 1
    assert "(torchrun's default --nproc-per-node 1)" in imported.text
    cfg = _write(tmp_path, "torchrun --nproc_per_node $GPUS src/train.py x.yaml\n")
    imported = import_llamafactory(cfg)
    assert _warned(imported, "not a literal positive count")


def test_a_script_for_another_yaml_is_not_used(tmp_path: Path) -> None:
    cfg = _write(tmp_path, "torchrun --nproc_per_node 4 src/train.py other/x.yaml\n"
                 "torchrun --nproc_per_node 4 src/train.py y.yaml\n")
    imported = import_llamafactory(cfg)
    assert imported.data["resources"]["gpus_per_node"] == 1


ACCELERATE = ("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n"
              "mixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\nuse_cpu: false\n"
              "dynamo_config: {dynamo_backend: INDUCTOR}\n"
              "parallelism_config: {parallelism_config_tp_size: 2}\n"
              "fsdp_config:\n  fsdp_version: 2\n  fsdp_offload_params: true\n"
              "  fsdp_activation_checkpointing: true\n  fsdp_reshard_after_forward: false\n"
              "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
              "  fsdp_transformer_layer_cls_to_wrap: "
              "transformers.models.qwen2.modeling_qwen2.Qwen2DecoderLayer\n")


def test_explicit_launch_and_accelerate_config(tmp_path: Path) -> None:
    """--launch and --accelerate-config need not sit beside the YAML; the command line's
    --num_processes wins over the file's; a key without a spec field is a warning at its
    line; FSDP's activation checkpointing is the spec's."""
    cfg = tmp_path / "x.yaml"
    cfg.write_text(YAML + "disable_gradient_checkpointing: true\n")
    elsewhere = tmp_path / "launch"
    elsewhere.mkdir()
    (elsewhere / "go.sh").write_text("accelerate launch --num_processes 4 src/train.py x.yaml\n")
    (elsewhere / "acc.yaml").write_text(ACCELERATE)
    imported = import_llamafactory(cfg, launch=elsewhere / "go.sh",
                                   accelerate_config=elsewhere / "acc.yaml")
    data = imported.data
    assert data["resources"]["gpus_per_node"] == 4
    assert "from " + str(elsewhere / "go.sh") + ":1 (--num_processes)" in imported.text
    fsdp = data["distributed"]["fsdp"]
    assert (fsdp["version"], fsdp["cpu_offload"], fsdp["reshard_after_forward"],
            fsdp["transformer_layer_cls"]) == (2, True, False, "Qwen2DecoderLayer")
    assert data["training"]["gradient_checkpointing"] is True
    assert data["training"]["compile"] is True  # dynamo_config: torch.compile
    (tp,) = _warned(imported, "parallelism_config")
    assert tp.startswith(f"{elsewhere / 'acc.yaml'}:8:1")
    acc = accelerate_reads(compiled_files(imported.text, "x")["accelerate.yaml"])
    assert acc["fsdp_config"]["fsdp_offload_params"] is True
    assert acc["num_processes"] == 4


def test_precision_the_yaml_leaves_to_accelerate_is_warned(tmp_path: Path) -> None:
    acc = tmp_path / "acc.yaml"
    acc.write_text("distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"
                   "use_cpu: false\ncompute_environment: LOCAL_MACHINE\n")
    cfg = _write(tmp_path, "accelerate launch --config_file acc.yaml src/train.py x.yaml\n",
                 YAML.replace("bf16: true\n", ""))
    imported = import_llamafactory(cfg)
    assert imported.data["distributed"]["strategy"] == "ddp"
    (warning,) = _warned(imported, "mixed_precision bf16")
    assert "acc.yaml:2:1" in warning and "bf16 autocast" in warning


def test_a_config_accelerate_refuses_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "acc.yaml").write_text("distributed_type: FSDP\nnot_an_accelerate_key: 1\n"
                                       "num_processes: 2\n")
    cfg = _write(tmp_path, "accelerate launch --config_file acc.yaml src/train.py x.yaml\n")
    imported = import_llamafactory(cfg)
    (warning,) = _warned(imported, "accelerate's config loader refuses it")
    assert "not_an_accelerate_key" in warning and "distributed" not in imported.data


def test_planted_links_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "acc.yaml").write_text("distributed_type: FSDP\nnum_processes: 2\n")
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(secret / "acc.yaml", work / "acc.yaml")
    cfg = _write(work, "accelerate launch --config_file acc.yaml src/train.py x.yaml\n")
    imported = import_llamafactory(cfg)
    assert "distributed" not in imported.data
    assert _warned(imported, "symbolic link")
    (work / "run.sh").unlink()
    (secret / "run.sh").write_text("torchrun --nproc_per_node 4 src/train.py x.yaml\n")
    os.symlink(secret / "run.sh", work / "run.sh")
    assert import_llamafactory(cfg).data["resources"]["gpus_per_node"] == 1
    (work / "run.sh").unlink()
    cfg = _write(work, "accelerate launch --config_file ../secret/acc.yaml x.yaml\n")
    imported = import_llamafactory(cfg)
    assert "distributed" not in imported.data and _warned(imported, "climbs out")


def test_cli_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.yaml").write_text(YAML)
    Path("acc.yaml").write_text(ACCELERATE)
    Path("go.sh").write_text("accelerate launch src/train.py x.yaml\n")
    code, out, err = run(capsys, "import", "llamafactory", "x.yaml", "--launch", "go.sh",
                         "--accelerate-config", "acc.yaml")
    assert code == 0, err
    assert "gpus_per_node: 8 # from acc.yaml:5" in out
    assert "acc.yaml:8:1: warning: parallelism_config" in err
    code, _, err = run(capsys, "import", "trl", "x.yaml", "--launch", "go.sh")
    assert code != 0 and "--launch and --accelerate-config are for" in err


def test_short_fsdp_keys_bad_values_and_hidden_gpus(tmp_path: Path) -> None:
    """accelerate adds the fsdp_ prefix to fsdp_config's keys; a value it does not know is
    a warning (the default is imported); visible GPUs fewer than the processes, too."""
    (tmp_path / "acc.yaml").write_text(
        "distributed_type: FSDP\nnum_processes: 4\nfsdp_config:\n  version: 2\n"
        "  offload_params: true\n  fsdp_state_dict_type: HALF_STATE_DICT\n")
    cfg = _write(tmp_path, "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --config_file acc.yaml "
                 "src/train.py x.yaml\n")
    imported = import_llamafactory(cfg)
    fsdp = imported.data["distributed"]["fsdp"]
    assert (fsdp["version"], fsdp["cpu_offload"], fsdp["state_dict_type"]) == (2, True,
                                                                               "sharded")
    (bad,) = _warned(imported, "HALF_STATE_DICT")
    assert "acc.yaml:6:3" in bad and "imported as sharded" in bad
    (hidden,) = _warned(imported, "CUDA_VISIBLE_DEVICES shows 2 GPUs")
    assert "run.sh:1:1" in hidden
    assert imported.data["resources"]["gpus_per_node"] == 4


def test_a_copied_yaml_keeps_its_usage_comment(tmp_path: Path) -> None:
    """Copied out of LLaMA-Factory's tree, the ascend YAML's usage comment still names it;
    its accelerate config is then not found: a warning at the comment's line says so."""
    src = CORPUS / "examples/ascend/qwen3_full_sft_fsdp2.yaml"
    cfg = tmp_path / src.name
    cfg.write_text(src.read_text())
    imported = import_llamafactory(cfg)
    (missing,) = _warned(imported, "--config_file examples/accelerate/fsdp2_config.yaml")
    assert missing.startswith(f"{cfg}:3:1") and "not found" in missing
    imported = import_llamafactory(cfg, accelerate_config=CORPUS / PAIRS[
        "examples/ascend/qwen3_full_sft_fsdp2.yaml"])
    assert imported.data["distributed"]["fsdp"]["version"] == 2
    assert imported.data["resources"]["gpus_per_node"] == 2
