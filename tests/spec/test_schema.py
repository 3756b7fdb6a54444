"""The committed JSON Schema: equal to `ftspec schema`, valid 2020-12, accepts every example."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ftspec.spec.schema import REGENERATE, generate_schema, render_schema
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "ftspec.schema.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def test_committed_schema_is_current() -> None:
    current = render_schema(generate_schema())
    assert SCHEMA.read_text(encoding="utf-8") == current, (
        f"schemas/ftspec.schema.json is out of date; regenerate it with `{REGENERATE}`"
    )


def test_schema_command_prints_the_same() -> None:
    proc = subprocess.run([sys.executable, "-m", "ftspec.cli", "schema"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0
    assert proc.stdout == SCHEMA.read_text(encoding="utf-8")


def test_schema_is_valid_draft_2020_12() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_every_field_has_a_description() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    missing = [
        f"{name}.{prop}"
        for name, definition in schema.get("$defs", {}).items()
        for prop, body in definition.get("properties", {}).items()
        if "description" not in body
    ]
    missing += [p for p, body in schema["properties"].items() if "description" not in body]
    assert not missing


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_passes_check_jsonschema(example: Path) -> None:
    tool = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    proc = subprocess.run([tool, "--schemafile", str(SCHEMA), str(example)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_passes_ftspec_validate(example: Path) -> None:
    from ftspec.spec.validate import validate_file

    result = validate_file(example)
    assert result.ok, [d.format() for d in result.diagnostics.items]


def test_examples_carry_the_schema_modeline() -> None:
    for example in EXAMPLES:
        first = example.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schemas/ftspec.schema.json", example


def test_check_jsonschema_rejects_a_bad_spec() -> None:
    tool = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    bad = ROOT / "tests" / "invalid" / "enum-typo-launcher.yaml"
    proc = subprocess.run([tool, "--schemafile", str(SCHEMA), str(bad)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
