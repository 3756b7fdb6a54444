"""The launch topology an import assumes (issue 24): every hint the source gives — a usage
comment, ``use_cpu``, ``device: cpu``, a ``*_single_device`` recipe, the launcher's one
process per GPU when the config shards — and a warning wherever a count was assumed; the
distributed settings stay in the spec and reach accelerate.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.topology import ASSUMED_GPUS
from ftspec.compiler.importers.trl import import_trl
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed
from helpers.trl_parse import accelerate_reads, compiled_files

CORPUS = Path(__file__).parent / "corpus"
TRL = "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/Capybara\n"


def test_sharded_config_without_count_assumes_a_node_and_keeps_fsdp() -> None:
    imported = import_axolotl(CORPUS / "axolotl" / "qwen2-qlora-fsdp.yaml")
    assert imported.data["resources"]["gpus_per_node"] == ASSUMED_GPUS
    (warned,) = [w for w in imported.warnings if "names no process count" in w.summary]
    assert warned.path == ("fsdp",) and warned.span is not None and warned.span.line > 1
    acc = accelerate_reads(compiled_files(imported.text, "fsdp")["accelerate.yaml"])
    assert acc["distributed_type"] == "FSDP" and acc["num_processes"] == ASSUMED_GPUS


def test_usage_comment_gives_the_count(tmp_path: Path) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("# accelerate launch --num_processes 4 trl sft --config sft.yaml\n" + TRL)
    imported = import_trl(cfg)
    assert imported.data["resources"]["gpus_per_node"] == 4
    assert "sft.yaml:1 (its usage comment)" in imported.text
    cfg.write_text("# CUDA_VISIBLE_DEVICES=0,1 llamafactory-cli train x.yaml\n" + TRL)
    assert import_trl(cfg).data["resources"]["gpus_per_node"] == 2


def test_use_cpu_trains_on_the_cpu(tmp_path: Path) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(TRL + "use_cpu: true\n")
    imported = import_trl(cfg)
    res = imported.data["resources"]
    assert res["gpus_per_node"] == 0 and res["processes_per_node"] == 1
    assert "accelerator" not in res
    assert not [w for w in imported.warnings if w.path == ("use_cpu",)]


def test_plain_config_is_one_gpu_without_a_warning(tmp_path: Path) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(TRL)
    imported = import_trl(cfg)
    assert imported.data["resources"]["gpus_per_node"] == 1
    assert not [w for w in imported.warnings if "process count" in w.summary]


@pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")
def test_torchtune_single_device_recipe_on_cpu_is_one_process(tmp_path: Path) -> None:
    """Renamed, a *_single_device config is known by the recipe its usage comment runs;
    device: cpu is the CPU — not 8 processes with FSDP."""
    from ftspec.compiler.importers.torchtune import import_torchtune

    cfg = tmp_path / "mine.yaml"
    shutil.copy(configs_dir() / "llama3_2/1B_lora_single_device.yaml", cfg)
    cfg.write_text(cfg.read_text().replace("device: cuda", "device: cpu"))
    imported = import_torchtune(cfg)
    res = imported.data["resources"]
    assert (res["gpus_per_node"], res["processes_per_node"]) == (0, 1)
    assert "distributed" not in imported.data
    assert "(its usage comment runs the lora_finetune_single_device recipe)" in imported.text
    cfg.write_text("\n".join(line for line in cfg.read_text().splitlines()
                             if "tune run" not in line) + "\n")
    res = import_torchtune(cfg).data["resources"]
    assert (res["gpus_per_node"], res["processes_per_node"]) == (0, 1)  # device: cpu


@pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")
def test_torchtune_assumed_count_is_warned(tmp_path: Path) -> None:
    from ftspec.compiler.importers.torchtune import DEFAULT_NPROC, import_torchtune

    cfg = tmp_path / "mine.yaml"
    text = (configs_dir() / "llama3_2/1B_full.yaml").read_text()
    cfg.write_text("\n".join(line for line in text.splitlines() if "tune run" not in line))
    imported = import_torchtune(cfg)
    assert imported.data["resources"]["gpus_per_node"] == DEFAULT_NPROC
    assert [w for w in imported.warnings if "names no process count" in w.summary]
