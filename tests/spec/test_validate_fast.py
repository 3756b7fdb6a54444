"""The live commands' model-first validation agrees with the full pipeline (``validate``).

``validate_doc(doc, schema="on-error")`` skips the JSON Schema check when the strict model
accepts the spec (see ``ftspec.spec.validate``). These tests run both ways over every
example and every invalid case, and check that the shortcut really is taken for valid specs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.spec import validate as validation
from ftspec.spec.loader import SourceDoc, load_spec_file, parse_yaml
from ftspec.spec.validate import validate_doc

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _loadable(path: Path) -> bool:
    """Files that load as a mapping; the others fail before either path is reached (their
    messages are covered by the invalid-case goldens)."""
    from ftspec.spec.diagnostics import SpecError

    try:
        load_spec_file(path)
    except SpecError:
        return False
    return True


FILES = [p for p in sorted((ROOT / "examples").glob("*.yaml"))
         + sorted((TESTS / "invalid").glob("*.yaml")) if _loadable(p)]


def _outcome(doc: SourceDoc, mode: validation.SchemaMode) -> tuple[object, ...]:
    result = validate_doc(doc, mode)
    spec = None if result.spec is None else result.spec.model_dump(mode="python")
    return (result.ok, spec, [d.format() for d in result.diagnostics.sorted()])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_model_first_gives_the_same_result(path: Path) -> None:
    doc = load_spec_file(path)
    assert _outcome(doc, "on-error") == _outcome(doc, "always")


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_valid_examples_take_the_shortcut(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.spec import schema_check

    def fail(_doc: SourceDoc) -> list[object]:
        raise AssertionError("the JSON Schema check ran for a valid spec")

    monkeypatch.setattr(schema_check, "check_schema", fail)
    result = validate_doc(load_spec_file(path), "on-error")
    assert result.ok, [d.format() for d in result.diagnostics]


def _example_with(key: tuple[str, ...], value: object) -> SourceDoc:
    text = (ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml").read_text()
    doc = parse_yaml(text, "x.yaml")
    node = doc.data
    for part in key[:-1]:
        node = node[part]
    node[key[-1]] = value
    return doc


@pytest.mark.parametrize(("key", "value"), [
    (("training", "epochs"), "3"),            # lax pydantic would coerce; the schema refuses
    (("training", "epochs"), True),
    (("training", "epochs"), 3.0),            # strict model refuses, schema accepts: fallback
    (("metadata", "name"), 7),
    (("training", "learning_rate"), float("nan")),
])
def test_coercions_and_edge_values_agree(key: tuple[str, ...], value: object) -> None:
    doc = _example_with(key, value)
    assert _outcome(doc, "on-error") == _outcome(doc, "always")


def test_lax_model_would_accept_what_the_schema_refuses() -> None:
    """Why the shortcut uses strict mode: the lax model takes "3" for an integer."""
    from ftspec.spec.model import FineTuneSpec

    doc = _example_with(("training", "epochs"), "3")
    assert FineTuneSpec.model_validate(doc.data).training.epochs == 3
    assert validation._strict_model(doc.data) is None
    assert not validate_doc(doc, "on-error").ok


def test_yaml_only_values_fall_back() -> None:
    import datetime

    assert validation._as_json({"a": datetime.date(2024, 1, 1)}) is None
    assert validation._as_json({1: "x"}) is None
    assert validation._as_json({"a": float("inf")}) is None
    assert validation._as_json({"a": [1, 2.5, "x", None, True]}) is not None
