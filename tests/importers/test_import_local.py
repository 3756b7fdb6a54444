"""Local configs stay local (issue 24): a local model folder and dataset become file:// URIs,
the model's own config.json gives its numbers, the dataset's first row its format, use_cpu the
CPU; torchtune's generic builders with explicit dimensions become model.architecture; hub
names of re-uploads and distills match their catalog family by a documented rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ftspec.compiler.importers.base import match_family
from ftspec.compiler.importers.trl import import_trl
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed
from helpers.trl_parse import accelerate_reads, compiled_files, trl_reads

CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
          "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512,
          "tie_word_embeddings": True}


@pytest.mark.parametrize(("row", "fmt"), [
    ({"messages": [{"role": "user", "content": "hi"}]}, "chat"),
    ({"prompt": "2+2=", "completion": "4"}, "prompt_completion"),
    ({"text": "plain"}, "text"),
])
def test_local_model_and_data_run_on_the_cpu(tmp_path: Path, row: dict[str, object],
                                             fmt: str) -> None:
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: tiny\ndatasets:\n  - path: json\n"
                   "    data_files: rows.jsonl\nuse_cpu: true\n")
    imported = import_trl(cfg)
    data = imported.data
    assert data["model"]["uri"] == "file://./tiny"
    arch = data["model"]["architecture"]
    assert (arch["num_layers"], arch["embed_dim"], arch["num_kv_heads"], arch["layer_cls"]) \
        == (2, 64, 2, "Qwen2DecoderLayer")
    assert "family" not in data["model"]
    train = data["data"]["train"]
    assert (train["uri"], train["format"]) == ("file://./rows.jsonl", fmt)
    assert data["resources"]["gpus_per_node"] == 0
    assert validate_doc(parse_yaml(imported.text, "spec.yaml")).ok
    files = compiled_files(imported.text, "local")
    assert accelerate_reads(files["accelerate.yaml"])["use_cpu"] is True
    _, sft, _, _ = trl_reads(files["sft.yaml"])
    if fmt == "prompt_completion":  # TRL's default mask for these rows: the completion
        assert sft.completion_only_loss is not False
    if fmt == "chat":  # TRL's default for conversations: every token
        assert sft.assistant_only_loss is False


def test_local_rows_trl_cannot_read_are_named(tmp_path: Path) -> None:
    """Alpaca columns in a local file: TRL finds no column it trains on, and the import says
    which columns the file has instead of a generic guess; without a file, the guess."""
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"instruction": "Say hi.", "input": "", "output": "hi"}) + "\n")
    cfg = tmp_path / "sft.yaml"
    for dataset, key, said in (
            ("datasets: [{path: json, data_files: rows.jsonl}]", "datasets",
             ("first row has the columns instruction, input, output, none of which TRL "
              "trains on")),
            ("dataset_name: org/hub-rows", "dataset_name", "TRL picks the columns")):
        cfg.write_text(f"model_name_or_path: Qwen/Qwen2.5-0.5B\n{dataset}\n")
        (w,) = [w for w in import_trl(cfg).warnings if w.path == (key,)]
        assert said in w.summary
        assert w.span is not None and w.span.line == 2  # at the data key


def test_a_data_file_as_dataset_name_is_refused_at_its_line(tmp_path: Path) -> None:
    """TRL passes dataset_name to datasets.load_dataset, which refuses a file: the import
    refuses it at the line and names TRL's own form for a file."""
    from ftspec.spec.diagnostics import SpecError

    (tmp_path / "rows.jsonl").write_text(json.dumps({"text": "hi"}) + "\n")
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nlearning_rate: 1.0e-5\n"
                   "dataset_name: ./rows.jsonl\n")
    with pytest.raises(SpecError) as info:
        import_trl(cfg)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (3, 1)
    assert diag.hint is not None and "path: json, data_files: ./rows.jsonl" in diag.hint


def test_trl_datasets_entries_refuse_what_the_spec_cannot_say(tmp_path: Path) -> None:
    from ftspec.spec.diagnostics import SpecError

    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndatasets:\n  - path: json\n"
                   "    data_files: [a.jsonl, b.jsonl]\n")
    with pytest.raises(SpecError) as info:
        import_trl(cfg)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (4, 5)
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndatasets:\n"
                   "  - path: trl-lib/Capybara\n  - path: org/other\n    split: train\n")
    mixture = import_trl(cfg).data["data"]["mixture"]
    assert [d["uri"] for d in mixture["datasets"]] == ["hf://trl-lib/Capybara",
                                                       "hf://org/other"]
    assert mixture["strategy"] == "concatenate"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: org/ignored\n"
                   "datasets:\n  - path: trl-lib/Capybara\n")
    both = import_trl(cfg)
    assert both.data["data"]["train"]["uri"] == "hf://trl-lib/Capybara"
    [ignored] = [w for w in both.warnings if w.path == ("dataset_name",)]
    assert "ignores dataset_name" in ignored.summary


def test_target_local_without_a_gpu_trains_on_the_cpu(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--target local` on a machine without a GPU: gpus_per_node 0, one process, no GPU
    model, each a warning; with a GPU, the source's resources stay."""
    from ftspec.compiler.importers import aim_local
    from ftspec.compiler.importers.aim import aim

    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/Capybara\n"
                   "learning_rate: 1.0e-5\n")
    monkeypatch.setattr(aim_local, "machine_has_gpu", lambda: False)
    cpu = aim(import_trl(cfg), ("local",))
    assert cpu.data["resources"] == {"gpus_per_node": 0, "processes_per_node": 1}
    said = [w.summary for w in cpu.warnings if w.path[:1] == ("resources",)]
    assert len(said) == 3 and all("no GPU" in s for s in said)
    assert validate_doc(parse_yaml(cpu.text, "spec.yaml")).ok
    monkeypatch.setattr(aim_local, "machine_has_gpu", lambda: True)
    gpu = aim(import_trl(cfg), ("local",))
    assert gpu.data["resources"]["gpus_per_node"] == 1


@pytest.mark.parametrize(("name", "found"), [
    ("Qwen/Qwen2.5-0.5B-Instruct", ("qwen2_5-0.5b", True)),
    ("casperhansen/llama-3-70b-fp16", ("llama3-70b", False)),
    ("unsloth/Llama-3.2-1B-Instruct-bnb-4bit", ("llama3_2-1b", False)),
    ("hugging-quants/Meta-Llama-3.1-405B-BNB-NF4-BF16", ("llama3_1-405b", False)),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", ("qwen2_5-7b", False)),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", ("llama3_1-8b", False)),
    ("HuggingFaceTB/SmolLM3-3B", ("smollm3-3b", True)),
    ("HuggingFaceTB/SmolLM3-3B-checkpoints", ("smollm3-3b", False)),
    ("openai/gpt-oss-20b", ("gpt-oss-20b", True)),
    ("mistralai/Devstral-Small-2507", ("devstral-small", True)),
    ("allenai/Olmo-3-7B-Instruct-SFT", ("olmo3-7b", False)),  # in the catalog since 3345edd
    ("LiquidAI/LFM2-350M", None),
    # Qwen2.5's code and math lines, and words after the size (a derivative's)
    ("Qwen/Qwen2.5-Coder-7B-Instruct", ("qwen2_5-7b", False)),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", ("qwen2_5-32b", False)),
    ("open-r1/Qwen2.5-Math-7B-RoPE-300k", ("qwen2_5-7b", False)),
    ("microsoft/Phi-4-reasoning-plus", ("phi4-14b", False)),
])
def test_name_rule(name: str, found: tuple[str, bool] | None) -> None:
    assert match_family(name) == found


def test_assumed_family_and_out_of_catalog_say_so(tmp_path: Path) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: casperhansen/llama-3-70b-fp16\n"
                   "dataset_name: trl-lib/Capybara\n")
    imported = import_trl(cfg)
    assert imported.data["model"]["family"] == "llama3-70b"
    assert "(catalog family assumed from the name)" in imported.text
    assert [w for w in imported.warnings if "assumed the catalog family llama3-70b" in
            w.summary]
    cfg.write_text("model_name_or_path: LiquidAI/LFM2-350M\n"
                   "dataset_name: trl-lib/Capybara\n")
    (why,) = [w for w in import_trl(cfg).warnings if w.path == ("model_name_or_path",)]
    assert "validate needs model.architecture" in why.summary
    assert "memory estimate" not in why.summary


@pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")
def test_torchtune_generic_builder_is_a_custom_architecture(tmp_path: Path) -> None:
    from ftspec.compiler.importers.torchtune import import_torchtune

    cfg = tmp_path / "custom.yaml"
    shutil.copy(configs_dir() / "llama2/7B_lora_single_device.yaml", cfg)
    cfg.write_text(cfg.read_text().replace(
        "torchtune.models.llama2.lora_llama2_7b",
        "torchtune.models.llama2.lora_llama2\n  vocab_size: 32000\n  num_layers: 2\n"
        "  num_heads: 4\n  num_kv_heads: 4\n  embed_dim: 64\n  max_seq_len: 512"))
    imported = import_torchtune(cfg)
    arch = imported.data["model"]["architecture"]
    assert arch["base"] == "llama2" and arch["num_layers"] == 2
    assert arch["intermediate_dim"] == 256  # torchtune's scale_hidden_dim_for_mlp(64)
    assert validate_doc(parse_yaml(imported.text, "spec.yaml")).ok
    # compiled back, the component's LoRA settings are the source's (no raw override)
    assert not [w for w in imported.warnings if w.path and w.path[:1] == ("model",)
                and w.path != ("model",)]
