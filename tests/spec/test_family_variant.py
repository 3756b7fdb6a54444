"""A model.family that differs from a catalog name only by -instruct / -base resolves to the
catalog's key with a warning at the field (the spec and the importers' hub-id match)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.importers.base import match_family
from ftspec.spec.catalog.models import FAMILY_ALIASES, MODEL_FAMILIES, VARIANT_ALIASES
from ftspec.spec.catalog.variants import variant_names
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import SchemaMode, validate_doc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sfttrainer-fms-hf-tuning.yaml"
FAMILY_AT = "spec.yaml:{}:11".format(next(
    i for i, line in enumerate(EXAMPLE.read_text().splitlines(), 1)
    if "family: granite-3.1-8b" in line))
"""Where the example's model.family value lies (its comments may move it)."""


def _validate(family: str, mode: SchemaMode) -> tuple[object, list[str]]:
    text = EXAMPLE.read_text().replace("family: granite-3.1-8b", f"family: {family}", 1)
    assert f"family: {family}" in text
    result = validate_doc(parse_yaml(text, "spec.yaml"), mode)
    key = result.spec.model.family if result.spec is not None else None
    return key, [d.format() for d in result.diagnostics.sorted()]


@pytest.mark.parametrize("mode", ["always", "on-error"])
def test_instruct_name_of_a_base_entry_resolves_with_a_located_warning(mode: SchemaMode) -> None:
    key, shown = _validate("granite-34b-code-instruct", mode)
    assert key == "granite-34b-code-base"
    assert len(shown) == 1 and shown[0].startswith(f"{FAMILY_AT}: warning: model.family: "
                                                   'model family "granite-34b-code-instruct" '
                                                   "is not in the catalog; read as "
                                                   "granite-34b-code-base"), shown
    assert "hint: write model.family: granite-34b-code-base" in shown[0]


def test_base_name_of_an_entry_without_ending_resolves_with_a_warning() -> None:
    key, shown = _validate("qwen3-8b-base", "always")
    assert key == "qwen3-8b"
    assert [s.split(": warning: ")[0] for s in shown] == [FAMILY_AT]


def test_a_catalog_key_gives_no_warning_and_another_ending_stays_an_error() -> None:
    assert _validate("granite-34b-code-base", "always") == ("granite-34b-code-base", [])
    key, shown = _validate("granite-34b-code-chat", "always")
    assert key is None and shown[0].startswith(f"{FAMILY_AT}: error: model.family: "
                                               "invalid value")
    # the hint names the catalog's key, not the variant it also accepts (granite-34b-code)
    assert shown[0].endswith('hint: did you mean "granite-34b-code-base"?'), shown


def test_variants_are_neither_keys_nor_aliases_and_point_at_keys() -> None:
    assert not set(VARIANT_ALIASES) & (set(MODEL_FAMILIES) | set(FAMILY_ALIASES))
    assert set(VARIANT_ALIASES.values()) <= set(MODEL_FAMILIES)
    assert VARIANT_ALIASES["ibm-granite/granite-34b-code-instruct"] == "granite-34b-code-base"


def test_a_variant_two_keys_share_is_left_out() -> None:
    found = variant_names({"x-7b-base": "x-7b-base", "x-7b-instruct": "x-7b-chat",
                           "y-1b": "y-1b"})
    assert "x-7b" not in found  # the stem of both: either model
    assert found == {"y-1b-base": "y-1b", "y-1b-instruct": "y-1b"}


@pytest.mark.parametrize(("hub_id", "expected"), [
    ("ibm-granite/granite-34b-code-instruct", ("granite-34b-code-base", False)),
    ("ibm-granite/granite-8b-code-instruct", ("granite-8b-code-base", False)),
    ("Qwen/Qwen3-8B-Instruct", ("qwen3-8b", True)),  # the suffix rule: still exact
    ("meta-llama/Llama-3.2-1B-Instruct", ("llama3_2-1b", True)),
])
def test_importers_match_a_variant_hub_id_as_not_exact(hub_id: str,
                                                        expected: tuple[str, bool]) -> None:
    assert match_family(hub_id) == expected
