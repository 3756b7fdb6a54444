"""Importers never write text they did not read back (issue 20, item 6).

A file name or a ``KEY=VALUE`` argument ends up in the spec's ``# from …`` comments. With a
line break in it (newline, CR, NEL ``\\x85``, U+2028/U+2029) it used to end the comment and
write YAML of the attacker's choosing (``output.push_to_hub``). Two defences, each tested
on its own for every importer: the comment text is escaped (the attack string is written as
visible ``\\n`` … and the spec holds exactly what the import meant), and the rendered text is
parsed back with the spec loader and compared with the data (with the escape switched off,
the import is refused: exit 1, an ``import.internal`` error, nothing written).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers import render
from ftspec.spec.loader import parse_yaml
from ftspec.spec.text import escape_text
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed
from helpers.cli_run import run

CORPUS = Path(__file__).parent / "corpus"

BREAKS = {"newline": "\n", "cr": "\r", "nel": "\x85", "u2028": "\u2028", "u2029": "\u2029"}
"""Characters a YAML reader (ruamel's, the spec loader's) takes as the end of a line."""
HARMLESS = {"hash": "#", "colon": ": ", "ansi": "\x1b[2J"}
"""Text that only looks like YAML or a terminal command inside a comment."""
ATTACKS = BREAKS | HARMLESS

SOURCES = {
    "trl": "trl/trl-cli-example_config.yaml",
    "axolotl": "axolotl/llama-3-lora-1b.yml",
    "llamafactory": "llamafactory/llama3_lora_sft.yaml",
    "oumi": "oumi/smollm2-135m_full-train.yaml",
    "trainjob": "trainjob/hello-world.yaml",
}
ARG_OF = {"torchtune": "output_dir", "oumi": "training.output_dir"}
"""The tools that take KEY=VALUE arguments, and a key each reads as a path."""


def _hostile(sep: str) -> str:
    return f"x{sep}  push_to_hub: attacker_exfil{sep}#"


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def _source(tool: str, name: str) -> None:
    if tool == "torchtune":
        if not torchtune_installed():
            pytest.skip("torchtune not installed")
        shutil.copy(configs_dir() / "llama3_2/1B_lora_single_device.yaml", name)
    else:
        shutil.copy(CORPUS / SOURCES[tool], name)


def _keys(data: Any) -> set[str]:
    if isinstance(data, dict):
        return {str(k) for k in data} | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def _check_written(text: str, shown: str) -> None:
    """The spec parses with the spec loader, has no planted key, no line (split as YAML
    readers split them) starts with the planted key, and the comments show the attack
    escaped."""
    doc = parse_yaml(text, "spec.yaml")
    assert "push_to_hub" not in _keys(doc.data)
    assert not [line for line in text.splitlines() if line.lstrip().startswith("push_to_hub")]
    assert escape_text(shown) in text


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("tool", sorted(SOURCES) + ["torchtune"])
def test_file_name_is_escaped_in_comments(capsys: pytest.CaptureFixture[str], tool: str,
                                          attack: str) -> None:
    name = f"cfg{_hostile(ATTACKS[attack])}.yaml"
    _source(tool, name)
    run(capsys, "import", tool, name, "-o", "spec.yaml")
    _check_written(Path("spec.yaml").read_text(encoding="utf-8"), name)


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("tool", sorted(ARG_OF))
def test_argument_is_escaped_in_comments(capsys: pytest.CaptureFixture[str], tool: str,
                                         attack: str) -> None:
    name = "cfg.yaml"
    _source(tool, name)
    arg = f"{ARG_OF[tool]}=/tmp/o{_hostile(ATTACKS[attack])}"
    run(capsys, "import", tool, name, arg, "-o", "spec.yaml")
    text = Path("spec.yaml").read_text(encoding="utf-8")
    _check_written(text, arg)
    # The argument's value is data, quoted as YAML: it reads back as the one string given.
    assert parse_yaml(text, "spec.yaml").data["output"]["uri"].endswith(
        _hostile(ATTACKS[attack]))


@pytest.fixture()
def no_escape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The escape removed, as a regression would: the read-back check alone must refuse."""
    monkeypatch.setattr(render, "escape_text", lambda text: text)


def _refused(code: int, out: str, err: str) -> None:
    assert code == 1
    assert out == ""
    assert "error: internal error: the imported spec does not read back as written" in err
    assert "nothing was written" in err
    assert not Path("spec.yaml").exists()


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(BREAKS))
@pytest.mark.parametrize("tool", sorted(SOURCES) + ["torchtune"])
def test_unescaped_file_name_is_refused(capsys: pytest.CaptureFixture[str], no_escape: None,
                                        tool: str, attack: str) -> None:
    name = f"cfg{_hostile(BREAKS[attack])}.yaml"
    _source(tool, name)
    _refused(*run(capsys, "import", tool, name, "-o", "spec.yaml"))


@pytest.mark.parametrize("attack", sorted(BREAKS))
@pytest.mark.parametrize("tool", sorted(ARG_OF))
def test_unescaped_argument_is_refused(capsys: pytest.CaptureFixture[str], no_escape: None,
                                       tool: str, attack: str) -> None:
    _source(tool, "cfg.yaml")
    arg = f"{ARG_OF[tool]}=/tmp/o{_hostile(BREAKS[attack])}"
    _refused(*run(capsys, "import", tool, "cfg.yaml", arg, "-o", "spec.yaml"))


def test_the_issue_attack_writes_no_key(capsys: pytest.CaptureFixture[str],
                                        no_escape: None) -> None:
    """The exact command of the report, with the escape off: the text would have held a real
    ``output.push_to_hub``; the comparison names the key and refuses."""
    _source("torchtune", "tt.yaml")
    code, out, err = run(capsys, "import", "torchtune", "tt.yaml",
                         "output_dir=/tmp/o\n  push_to_hub: attacker/exfil\n#", "-o", "spec.yaml")
    _refused(code, out, err)
    assert ("at output.push_to_hub it holds 'attacker/exfil' where the import meant no such "
            "key" in err)


def test_read_back_names_the_difference() -> None:
    from ftspec.spec.diagnostics import SpecError

    with pytest.raises(SpecError) as caught:
        render.read_back("a: 1\nb: [x, 2]\n", {"a": 1, "b": ["x", "2"]})
    diag = caught.value.diagnostics[0]
    assert diag.code == "import.internal"
    assert "at b[1] it holds 2 where the import meant '2'" in diag.summary
    assert diag.span is not None and diag.span.line == 2
    with pytest.raises(SpecError) as caught:
        render.read_back("a: 1\n", {"a": 1.0})
    assert "at a it holds 1 where the import meant 1.0" in caught.value.diagnostics[0].summary
    with pytest.raises(SpecError) as caught:
        render.read_back("a: 1\nextra: true\n", {"a": 1})
    assert "at extra it holds True where the import meant no such key" in str(caught.value)
    assert render.read_back("a: 1.5\nb: [1, x]\n", {"a": 1.5, "b": (1, "x")}).data == {
        "a": 1.5, "b": [1, "x"]}


def test_a_value_with_no_yaml_form_is_refused() -> None:
    """A value YAML writes in a form the spec loader reads back as something else (a date:
    the loader converts no timestamps) is refused, not written."""
    import datetime

    from ftspec.compiler.importers.base import SpecDraft
    from ftspec.spec.diagnostics import SpecError

    draft = SpecDraft(parse_yaml("k: v\n", "src.yaml"))
    draft.put(("metadata", "name"), datetime.date(2024, 1, 2), "from src.yaml:1")
    with pytest.raises(SpecError) as caught:
        render.render(draft)
    assert "at metadata.name it holds '2024-01-02'" in caught.value.diagnostics[0].summary
    draft.put(("metadata", "name"), object(), "from src.yaml:1")
    with pytest.raises(SpecError) as caught:
        render.render(draft)
    assert "a value has no YAML form" in caught.value.diagnostics[0].summary
