"""torchtune configs from its main branch that name a model package no torchtune release
ships (Qwen3, Llama 4): the import refuses them at ``model._component_``, says why, and names
the catalog family the builder is. The configs are the installed torchtune's own Qwen2.5
config with the builder swapped (read from the package at test time)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from ftspec.compiler.importers.torchtune import import_torchtune
from ftspec.compiler.importers.torchtune_models import builder_family, missing_builder_module
from ftspec.spec.diagnostics import SpecError
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed

pytestmark = pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")

SHIPPED = "torchtune.models.qwen2_5.lora_qwen2_5_0_5b"


def _ships(package: str) -> bool:
    spec = importlib.util.find_spec("torchtune")
    roots = spec.submodule_search_locations or [] if spec is not None else []
    return any((Path(r) / "models" / package).is_dir() for r in roots)


def _config(tmp_path: Path, builder: str) -> tuple[Path, int]:
    text = (configs_dir() / "qwen2_5" / "0.5B_lora_single_device.yaml").read_text()
    assert f"_component_: {SHIPPED}\n" in text
    path = tmp_path / "config.yaml"
    path.write_text(text.replace(SHIPPED, builder))
    line = next(i for i, row in enumerate(text.splitlines(), 1) if SHIPPED in row)
    return path, line


@pytest.mark.skipif(_ships("qwen3"), reason="the installed torchtune ships Qwen3")
@pytest.mark.parametrize(("builder", "family"), [
    ("torchtune.models.qwen3.lora_qwen3_0_6b_instruct", "qwen3-0.6b"),
    ("torchtune.models.qwen3.qwen3_8b_base", "qwen3-8b"),
    ("torchtune.models.qwen3.qwen3_moe_30b_a3b_instruct", "qwen3-30b-a3b"),
])
def test_a_qwen3_config_is_refused_at_its_builder_naming_the_family(
        tmp_path: Path, builder: str, family: str) -> None:
    path, line = _config(tmp_path, builder)
    with pytest.raises(SpecError) as caught:
        import_torchtune(path)
    [diag] = caught.value.diagnostics
    shown = diag.format()
    assert shown.startswith(f"{path}:{line}:3: error: model._component_: model builder "
                            f"{builder}: torchtune.models.qwen3 is not in torchtune "), shown
    assert "no torchtune release on PyPI ships it yet" in shown
    assert f"the model is the catalog's {family}: write a spec with model.family {family}" \
        in shown


@pytest.mark.skipif(_ships("llama4"), reason="the installed torchtune ships Llama 4")
def test_a_llama4_config_is_refused_at_its_builder(tmp_path: Path) -> None:
    path, line = _config(tmp_path, "torchtune.models.llama4.lora_llama4_scout_17b_16e")
    with pytest.raises(SpecError) as caught:
        import_torchtune(path)
    [diag] = caught.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (line, 3)
    assert "torchtune.models.llama4 is not in torchtune" in diag.summary
    assert diag.hint is not None and "launcher: accelerate" in diag.hint


def test_a_shipped_builder_is_not_missing_and_still_imports(tmp_path: Path) -> None:
    assert missing_builder_module(SHIPPED) is None
    assert missing_builder_module("torchtune.models.nosuchmodel.builder") == \
        "torchtune.models.nosuchmodel"
    assert missing_builder_module("mypackage.models.x.y") is None
    path, _ = _config(tmp_path, SHIPPED)
    assert import_torchtune(path).data["model"]["family"] == "qwen2_5-0.5b"


@pytest.mark.parametrize(("builder", "family"), [
    ("torchtune.models.qwen3.qwen3_1_7b_base", "qwen3-1.7b"),
    ("torchtune.models.qwen3.lora_qwen3_32b", "qwen3-32b"),
    ("torchtune.models.qwen3.qwen3_14b_instruct", "qwen3-14b"),
    ("torchtune.models.llama4.llama4_maverick_17b_128e", "llama4-maverick-17b-128e"),
    ("torchtune.models.llama3_2_vision.llama3_2_vision_11b", None),
])
def test_builder_names_read_as_catalog_families(builder: str, family: str | None) -> None:
    assert builder_family(builder) == family
