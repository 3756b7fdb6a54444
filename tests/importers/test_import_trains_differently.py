"""Source keys the spec has no field for, whose loss changes what trains: the import warns
at the key and says how the run differs (not only "not imported"). Corpus configs from
``tests/importers/corpus`` (sources in each SOURCES file)."""

from __future__ import annotations

from pathlib import Path

from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.base import Imported
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.trl import import_trl

CORPUS = Path(__file__).parent / "corpus"


def _at(imported: Imported, *path: object) -> str:
    [warning] = [w for w in imported.warnings if w.path == path]
    return warning.summary


def test_llamafactory_optimizer_replacements_say_what_trains() -> None:
    muon = import_llamafactory(CORPUS / "llamafactory" / "2026-extras-muon-qwen2_full_sft.yaml")
    assert "Muon" in _at(muon, "use_muon") and "plain AdamW" in _at(muon, "use_muon")
    galore = import_llamafactory(
        CORPUS / "llamafactory" / "2026-extras-galore-llama3_full_sft.yaml")
    assert "GaLore's optimizer" in _at(galore, "use_galore")


def test_llamafactory_pissa_is_the_spec_init() -> None:
    imported = import_llamafactory(
        CORPUS / "llamafactory" / "2026-extras-pissa-llama3_lora_sft.yaml")
    assert imported.data["method"]["lora"]["init_weights"] == "pissa"
    assert "pissa_niter_16" in _at(imported, "pissa_iter")


def test_neftune_noise_is_warned_as_training_differently() -> None:
    imported = import_trl(CORPUS / "trl" / "handbook-2024-gemma-7b-sft-full-neftune.yaml")
    assert "without the noise" in _at(imported, "neftune_noise_alpha")


def test_sequence_parallelism_warns_of_the_global_batch(tmp_path: Path) -> None:
    alst = import_axolotl(CORPUS / "axolotl" / "2026-alst-llama3-8b-deepspeed-alst.yaml")
    assert "global batch" in _at(alst, "sequence_parallel_degree")
    assert "only these files" in _at(alst, "datasets", 0, "data_files")
    cfg = tmp_path / "sp1.yaml"
    cfg.write_text("base_model: meta-llama/Llama-3.1-8B\nlearning_rate: 1e-5\n"
                   "sequence_parallel_degree: 1\ndatasets:\n  - path: a/b\n"
                   "    type: completion\n")
    assert not [w for w in import_axolotl(cfg).warnings
                if w.path == ("sequence_parallel_degree",)]


def test_a_handbook_mixer_without_chat_template_names_its_row_assumption() -> None:
    """dataset_mixer rows are imported as chat; a recipe run by the handbook's run_cpt.py
    trains packed text rows instead, which the warning says how to write."""
    cpt = import_trl(CORPUS / "trl" / "handbook-2024-gpt2-nl-cpt.yaml")
    assert cpt.data["data"]["train"]["format"] == "chat"
    assert "run_cpt.py" in _at(cpt, "dataset_mixer")
    templated = import_trl(CORPUS / "trl" / "handbook-2024-gemma-7b-sft-full-neftune.yaml")
    assert not [w for w in templated.warnings if w.path == ("dataset_mixer",)]


def test_axolotl_pretraining_stream_imports_its_first_entry(tmp_path: Path) -> None:
    """pretraining_dataset: axolotl streams the first entry's text_column; the others are
    unread (warned), as is the stream's buffer order; reinit_weights says what trains."""
    muon = import_axolotl(CORPUS / "axolotl" / "2026-compare-muon-pretrain.yml")
    train = muon.data["data"]["train"]
    assert (train["uri"], train["format"], train["text_field"], train["subset"]) == (
        "hf://allenai/c4", "text", "text", "en")
    assert "shuffle buffer" in _at(muon, "pretraining_dataset")
    assert "at random" in _at(muon, "reinit_weights")
    assert not [w for w in muon.warnings if w.path == ("num_epochs",)]  # max_steps wins
    cfg = tmp_path / "two.yaml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-4\nmax_steps: 10\n"
                   "pretraining_dataset:\n  - path: a/b\n    text_column: body\n"
                   "  - path: c/d\n")
    two = import_axolotl(cfg)
    assert two.data["data"]["train"]["text_field"] == "body"
    assert "first entry only" in _at(two, "pretraining_dataset", 1)
