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


def test_keys_without_effect_are_one_note_apart_from_the_warnings() -> None:
    """model_type / tokenizer_type / plot_loss change nothing that trains: listed once, in a
    note (its own severity, so `ftspec import` prints it as `note:`), never as warnings;
    max_samples trains on fewer rows, which its warning says."""
    from ftspec.spec.diagnostics import Severity

    axolotl = import_axolotl(CORPUS / "axolotl" / "2026-gemma2-qlora.yml")
    [note] = [w for w in axolotl.warnings if w.severity is Severity.NOTE]
    assert note.code == "import.no-effect" and note.format().split(": ")[1] == "note"
    assert "model_type (line" in note.summary and "tokenizer_type (line" in note.summary
    warned = {w.path for w in axolotl.warnings if w.severity is Severity.WARNING}
    assert ("model_type",) not in warned and ("tokenizer_type",) not in warned
    lf = import_llamafactory(CORPUS / "llamafactory" / "qwen3_lora_sft.yaml")
    assert "trains differently: the tool trains on the first max_samples rows" in \
        _at(lf, "max_samples")
    [note] = [w for w in lf.warnings if w.severity is Severity.NOTE]
    assert "plot_loss (line 24)" in note.summary


def test_llamafactory_loss_variants_are_refused_at_their_line() -> None:
    import pytest
    from ftspec.spec.diagnostics import SpecError

    path = CORPUS / "llamafactory" / "refused" / "qwen2_full_sft_dft.yaml"
    with pytest.raises(SpecError) as info:
        import_llamafactory(path)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (9, 1)
    assert "DFT's loss" in diag.summary


def test_oumi_completions_only_collator_is_train_on_input_false(tmp_path: Path) -> None:
    import pytest
    from ftspec.compiler.importers.oumi import import_oumi
    from ftspec.spec.diagnostics import SpecError

    halloumi = import_oumi(CORPUS / "oumi" / "completions" / "halloumi-8b_train.yaml")
    entries = halloumi.data["data"]["mixture"]["datasets"]
    assert [e["train_on_input"] for e in entries] == [False] * 4
    assert halloumi.data["data"]["validation"]["train_on_input"] is False
    assert not [w for w in halloumi.warnings if w.path[-1:] in (("collator_name",),
                                                                ("train_target",))]
    cfg = tmp_path / "oumi.yaml"
    cfg.write_text("model:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\ndata:\n  train:\n"
                   "    collator_name: text_with_reasoning\n    datasets:\n"
                   "      - dataset_name: yahma/alpaca-cleaned\n"
                   "training:\n  trainer_type: TRL_SFT\n")
    with pytest.raises(SpecError) as info:
        import_oumi(cfg)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (5, 5)
