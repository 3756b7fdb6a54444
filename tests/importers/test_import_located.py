"""Every diagnostic of an import names its source line (never ``<unknown>``): the corpus
swept, a TrainJob named by ``metadata.generateName``, and torchtune's multi-node config whose
local paths no cluster target reads (refused at those paths' lines)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.importers import IMPORTERS, Imported, ImportOptions
from ftspec.compiler.importers.torchtune import import_torchtune
from ftspec.spec.diagnostics import SpecError
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed

CORPUS = Path(__file__).parent / "corpus"


def import_trainjob(path: Path) -> Imported:
    return IMPORTERS["trainjob"](path, (), ImportOptions())


TOOL_OF = {"trl": "trl", "fms": "trl", "axolotl": "axolotl", "llamafactory": "llamafactory",
           "oumi": "oumi", "trainjob": "trainjob"}
SKIP = ("accelerate", "deepspeed", "jobs")
"""Files that configs name (launcher configs, Oumi job configs), not configs."""
CONFIGS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml", ".json")
                 and p.parent.name not in SKIP)


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_diagnostic_is_located(config: Path) -> None:
    tool = TOOL_OF[config.relative_to(CORPUS).parts[0]]
    try:
        diags = IMPORTERS[tool](config, (), ImportOptions()).warnings
    except SpecError as exc:  # the refused/ configs
        diags = tuple(exc.diagnostics)
    assert [d.format() for d in diags if d.span is None or d.span.line < 1] == []


def test_generate_name_imports_as_the_name(tmp_path: Path) -> None:
    source = (CORPUS / "trainjob" / "with-runtime.yaml").read_text()
    assert "  name: custom-runtime-job\n" in source
    path = tmp_path / "generated.yaml"
    path.write_text(source.replace("  name: custom-runtime-job\n",
                                   "  generateName: custom-runtime-job-\n"))
    imported = import_trainjob(path)
    assert imported.data["metadata"]["name"] == "custom-runtime-job"
    [warning] = [w for w in imported.warnings if w.path == ("metadata", "generateName")]
    assert warning.span is not None and warning.span.line == source.splitlines().index(
        "  name: custom-runtime-job") + 1
    assert not [w for w in imported.warnings if w.is_error]
    assert validate_doc(parse_yaml(imported.text, "generated.ftspec.yaml")).ok


def test_generate_name_that_is_no_name_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
                    "  generateName: 9-\nspec:\n  runtimeRef:\n    name: torch-distributed\n")
    with pytest.raises(SpecError) as info:
        import_trainjob(path)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (4, 3)


@pytest.mark.skipif(not torchtune_installed(), reason="torchtune is not installed")
def test_multinode_torchtune_local_paths_are_refused_at_their_lines() -> None:
    """llama3_3/70B_full_multinode: two nodes need a cluster target, which reads no local
    files: the errors point at checkpoint_dir's and output_dir's lines."""
    config = configs_dir() / "llama3_3" / "70B_full_multinode.yaml"
    imported = import_torchtune(config)
    errors = [d for d in imported.warnings if d.is_error]
    assert {d.path for d in errors} == {("model", "uri"), ("output", "uri")}
    lines = config.read_text().splitlines()
    for diag in errors:
        assert diag.span is not None and diag.span.file == str(config)
        key = "checkpoint_dir:" if diag.path == ("model", "uri") else "output_dir:"
        assert key in lines[diag.span.line - 1]
