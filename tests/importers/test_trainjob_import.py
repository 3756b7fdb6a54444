"""``ftspec import trainjob FILE``: every corpus TrainJob imports, validates, compiles with
``--target kubeflow``, and the compiled TrainJob equals the source (after the CRD's defaults
and the keys listed in ``trainjob_defaults.MUST_DIFFER``). A TrainJob on a torchtune runtime
(the form the Kubeflow SDK writes) reads torchtune's own config with the TrainJob's args.
Corpus: ``tests/importers/corpus/trainjob`` (sources named in its SOURCES file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler.importers.base import NotThisTool
from ftspec.compiler.importers.trainjob import import_trainjob_doc
from ftspec.compiler.importers.trainjob_defaults import comparable
from ftspec.compiler.importers.trainjob_source import load_trainjob
from ftspec.compiler.pipeline import CompileOptions, compile_spec
from ftspec.spec.diagnostics import SpecError
from ftspec.spec.loader import parse_yaml
from helpers.trainjobs import SDK_TRAINJOB

CORPUS = Path(__file__).parent / "corpus" / "trainjob"
FILES = sorted(p.name for p in CORPUS.glob("*.yaml"))
ACC = "nvidia-a100-80gb"


def _compiled(text: str, name: str) -> dict[str, Any]:
    compiled = compile_spec(parse_yaml(text, f"{name}.ftspec.yaml"), "artifacts",
                            CompileOptions(target="kubeflow"))
    assert compiled.ok, [d.format() for d in compiled.diagnostics if d.is_error]
    objs = [a.obj for a in compiled.artifacts if isinstance(a.obj, dict)]
    assert [o["kind"] for o in objs] == ["TrainJob"]  # no launcher ConfigMap, no runtime
    return objs[0]


def _equal(source: dict[str, Any], compiled: dict[str, Any]) -> None:
    keep_ns = "namespace" in source.get("metadata", {})
    assert comparable(compiled, namespace=keep_ns) == comparable(source, namespace=keep_ns)


def test_corpus_is_named() -> None:
    listed = {line.split()[0] for line in (CORPUS / "SOURCES").read_text().splitlines()
              if line and not line.startswith("#")}
    assert listed == set(FILES) and len(FILES) >= 7


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_corpus_round_trip(name: str) -> None:
    doc = load_trainjob(CORPUS / name)
    imported = import_trainjob_doc(doc, accelerator=ACC)
    assert not [w for w in imported.warnings if w.is_error], imported.warnings
    # every key kept raw is a located warning on the source file, never silent
    raw = imported.data.get("overrides", {}).get("trainjob", {})
    assert raw, "custom trainers keep their command"
    assert all(w.span is not None and w.span.file == str(CORPUS / name) and w.span.line > 0
               for w in imported.warnings)
    _equal(doc.data, _compiled(imported.text, name))


def test_custom_trainer_is_said_to_run_its_own_program() -> None:
    imported = import_trainjob_doc(load_trainjob(CORPUS / "pytorch-simple.yaml"),
                                   accelerator=ACC)
    compiled = compile_spec(parse_yaml(imported.text, "x.yaml"), "checks",
                            CompileOptions(target="kubeflow"))
    own = [d for d in compiled.diagnostics if d.code == "kubeflow.own-command"]
    assert own and own[0].path == ("overrides", "trainjob", "spec", "trainer", "command")
    assert "# placeholder" in imported.text and "# from " in imported.text


def test_mapped_fields_have_their_source_lines() -> None:
    imported = import_trainjob_doc(load_trainjob(CORPUS / "kueue-integration.yaml"),
                                   accelerator=ACC)
    data = imported.data
    assert data["resources"]["nodes"] == 3
    assert data["deploy"]["kubeflow"]["suspend"] is True
    assert data["deploy"]["scheduling"]["image"] == "python:3.11-slim"
    assert data["metadata"]["labels"] == {"app": "training", "queue": "training-queue"}
    path = CORPUS / "kueue-integration.yaml"
    assert f"suspend: true # from {path}:30" in imported.text


def test_multi_document_file_keeps_its_line_numbers() -> None:
    doc = load_trainjob(CORPUS / "with-runtime.yaml")
    assert doc.data["metadata"]["name"] == "custom-runtime-job"
    assert doc.span_of(("metadata", "name")).line == 59  # its line in the file


def test_not_a_trainjob_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n")
    with pytest.raises(NotThisTool) as err:
        load_trainjob(path)
    d = err.value.diagnostics[0]
    assert (d.span.file, d.span.line, d.span.col) == (str(path), 2, 1)  # type: ignore[union-attr]
    path.write_text("apiVersion: trainer.kubeflow.org/v1beta9\nkind: TrainJob\n")
    with pytest.raises(NotThisTool) as err:
        load_trainjob(path)
    assert err.value.diagnostics[0].span.line == 1  # type: ignore[union-attr]


def test_two_trainjobs_in_one_file_are_refused(tmp_path: Path) -> None:
    one = (CORPUS / "hello-world.yaml").read_text()
    path = tmp_path / "two.yaml"
    path.write_text(one + "---\n" + one)
    with pytest.raises(SpecError) as err:
        load_trainjob(path)
    assert "more than one TrainJob" in err.value.diagnostics[0].summary


def test_torchtune_runtime_reads_the_config_the_controller_runs(tmp_path: Path) -> None:
    from ftspec.targets.torchtune_configs import torchtune_installed

    if not torchtune_installed():
        pytest.skip("torchtune's shipped configs are not installed")
    path = tmp_path / "sdk.yaml"
    path.write_text(SDK_TRAINJOB)
    doc = load_trainjob(path)
    imported = import_trainjob_doc(doc, accelerator=ACC)
    assert not [w for w in imported.warnings if w.is_error], imported.warnings
    data = imported.data
    assert data["launcher"] == "torchtune"
    assert data["model"]["family"] == "llama3_2-1b"
    assert data["model"]["uri"] == "hf://meta-llama/Llama-3.2-1B-Instruct"
    assert data["method"]["kind"] == "lora"
    assert data["method"]["lora"]["rank"] == 16 and data["method"]["lora"]["alpha"] == 32
    assert data["training"]["micro_batch_size"] == 4 and data["training"]["epochs"] == 2
    # not in the args: the value of the runtime's config (llama3_2/1B_lora), its line named
    assert "(the runtime's config)" in imported.text
    assert f"# from {path}:17" in imported.text  # batch_size=4
    _equal(doc.data, _compiled(imported.text, "sdk"))


def test_literal_credentials_are_refused_and_never_copied(tmp_path: Path) -> None:
    token = "hf_" + "q" * 30
    path = tmp_path / "sdk-token.yaml"
    path.write_text(SDK_TRAINJOB.replace(
        "      storageUri: hf://meta-llama/Llama-3.2-1B-Instruct\n",
        "      storageUri: hf://meta-llama/Llama-3.2-1B-Instruct\n"
        f"      env:\n        - name: ACCESS_TOKEN\n          value: {token}\n"))
    imported = import_trainjob_doc(load_trainjob(path), accelerator=ACC)
    errors = [w for w in imported.warnings if w.is_error]
    assert [e.code for e in errors] == ["import.literal-secret"]
    assert errors[0].span is not None and errors[0].span.line == 16  # the value line
    assert token not in imported.text and "<redacted>" in imported.text


def test_raw_args_are_said_to_shadow_the_spec(tmp_path: Path) -> None:
    from ftspec.targets.torchtune_configs import torchtune_installed

    if not torchtune_installed():
        pytest.skip("torchtune's shipped configs are not installed")
    path = tmp_path / "sdk.yaml"
    path.write_text(SDK_TRAINJOB)
    imported = import_trainjob_doc(load_trainjob(path), accelerator=ACC)
    kept = [w for w in imported.warnings if w.path == ("spec", "trainer", "args")]
    if imported.data["overrides"]["trainjob"].get("spec", {}).get("trainer", {}).get("args"):
        assert kept and "resolve differently at" in kept[0].summary
        compiled = compile_spec(parse_yaml(imported.text, "x.yaml"), "checks",
                                CompileOptions(target="kubeflow"))
        assert any(d.code == "kubeflow.raw-args" for d in compiled.diagnostics)
    else:
        assert not kept


def test_ftspecs_own_trainjob_comes_back_without_raw_patches(tmp_path: Path) -> None:
    """The kubeflow example compiled, imported, compiled again: the same TrainJob (only the
    spec digest differs), with nothing left in overrides (placement, output volume, HF token
    and every torchtune arg read back into spec fields)."""
    from ftspec.targets.torchtune_configs import torchtune_installed

    if not torchtune_installed():
        pytest.skip("torchtune's shipped configs are not installed")
    example = Path(__file__).parents[2] / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    first = _compiled(example.read_text(), "kubeflow-llama32-1b-lora-alpaca")
    path = tmp_path / "trainjob.yaml"
    path.write_text(yaml.safe_dump(first, sort_keys=False))
    imported = import_trainjob_doc(load_trainjob(path), accelerator=ACC)
    assert not [w for w in imported.warnings if w.is_error], imported.warnings
    assert "overrides" not in imported.data, imported.data.get("overrides")
    assert imported.data["output"]["uri"] == "pvc://ft-outputs/llama32-lora"
    assert imported.data["secrets"] == {"hf_token": {"secretRef": {"name": "hf-token",
                                                                   "key": "token"}}}
    again = _compiled(imported.text, "again")
    assert again["spec"] == first["spec"]
    assert again["metadata"]["labels"] == first["metadata"]["labels"]


@pytest.mark.parametrize(("name", "kind", "line"), [
    ("2026-multi-step.yaml", "TrainingRuntime torch-with-dataset-init", 34),
    ("2026-volcano-integration.yaml", "ClusterTrainingRuntime torch-distributed-volcano", 38),
])
def test_other_objects_of_the_file_are_said(name: str, kind: str, line: int) -> None:
    """Kubeflow's examples ship the runtime beside the TrainJob: the import reads the
    TrainJob and says, at the runtime's line, that the runtime is not imported."""
    from ftspec.compiler.importers import IMPORTERS, ImportOptions

    imported = IMPORTERS["trainjob"](CORPUS / name, (), ImportOptions())
    (w,) = [w for w in imported.warnings if "also holds" in w.summary]
    assert kind in w.summary and "not imported" in w.summary
    assert w.span is not None and w.span.line == line
