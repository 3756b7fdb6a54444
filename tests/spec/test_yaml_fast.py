"""The libyaml fast path answers exactly as the pure-Python path, or not at all.

For every example, golden and invalid input, hand-picked YAML corner cases and fuzzing
mutants of the examples: when ``_parse_fast`` answers, the pure path succeeds with the same
data, key spans and value spans; when the pure path fails, ``_parse_fast`` declines (so
every error still comes from the pure path, located as before).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from ftspec.spec import loader
from ftspec.spec.diagnostics import SpecError
from ftspec.spec.loader import MAX_NODES, SourceDoc, _parse_fast
from ftspec.spec.yaml_fast import FAST_MAX_CHARS, FAST_MAX_DEPTH, depth_bound, fast_compose
from ftspec.spec.yaml_nodes import new_yaml
from security.fuzzing import mutate

REPO = Path(__file__).resolve().parents[2]
FILES = sorted([*REPO.glob("examples/*.yaml"), *REPO.glob("tests/invalid/*.yaml"),
                *REPO.glob("tests/golden/**/*.yaml")])

CORNERS = [
    "a: on\nb: yes\nc: 2024-01-01\nd: 0o17\ne: 010\nf: 0x1F\ng: 1_000\nh: ~\ni:\nj: .inf\n",
    "a: !!int 12x\n", "a: !!str 12\nb: !!float 1\n", "a: 1\na: 2\n", "a: &x [1, 2]\nb: *x\n",
    "base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  y: 3\n", "a: &x 1\nb: &x 2\nc: *x\n",
    "a: *nope\n", "- a\n- b\n", "just a string\n", "", "# only a comment\n", "---\na: 1\n",
    "a: 1\n---\nb: 2\n", "a: 1\n...\n", "{a: 1, b: [x, y], c: {d: e}}\n", "[a: 1, b]\n",
    "{a:1}\n", "[a:1]\n", '{"a":1}\n', "a: 'it''s'\nb: \"\\u00e9\\/\\x41\"\n",
    "a: |\n  line\n  two\n\n\nb: >-\n  folded\n  text\n", "a: |2-\n    x\n", "a: |+\n  x\n\n",
    "key with spaces: value with: colon\nurl: http://x:8080/a#frag\n", "a: b # c\nd: e#f\n",
    "? [a, b]\n: c\n", "? a\n: b\n", "a:\n  - b: 1\n    c: 2\n  - - x\n    - y\n",
    "a: \"\\ud800\"\n", "a: 99999999999999999999\n", "a: 1e400\n", "a: .nan\n",
    "é: ü\n日本: 語\nemoji: \U0001F600 x\n", "a: \"multi\n  line\"\n", "a: multi\n  line plain\n",
    "%YAML 1.2\n---\na: 1\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
    "a: !custom 1\n", "a: !!binary aGk=\n", "a: !!set {x, y}\n", "a: !!omap [x: 1]\n",
    "a: [1, 2,]\n", "a: {b: 1,}\n", "a: [1, [2, [3, [4]]]]\n", "- - - x\n", "a:\n- b\n- c\n",
    "a: 'x'y\n", "a: [unclosed\n", "a: \"unclosed\n", "a: b: c\n", "-a: 1\n", "a: -\n",
    "@a: 1\n", "`a: 1\n", "a: @b\n", "a: %b\n", "'a': 1\n\"b\": 2\n", "a:    \n  b: 1\n",
    "a: null\nnull: 1\ntrue: 2\n1: 3\n", "a: 1\n b: 2\n", "a:\n  b: 1\n c: 2\n",
    "a: &anchor\n  b: 1\nc:\n  <<: [*anchor, {d: 2}]\n", "a: &r [*r]\n", "a: \"\\e\\a\\N\"\n",
    "a: 'x\n\n  y'\n", "a: >\n\n  x\n\n  y\n", "a:\n  # c\n  b: 1 # d\n", "a: x\r\nb: y\r\n",
    "a:\tb\n", "a: \u2028b\n", "\ufeffa: 1\n", "a: \x85b\n", "a: =\n", "<<: {a: 1}\nb: 2\n",
    "a: &x\n  b: 1\nc: *x\n", "a: !!map\n  b: 1\n", "a: &x !!str v\nb: !!str &y w\n",
    "a: [\n  1,\n  2\n]\n", "a: {\n b: 1 }\n", "- &x a\n- *x\n", "a: &x\n  - 1\nb: *x\n",
    "a:\n\n\n  b: 1\n", "a:   # note\n  b: 1\n", "a: 'x' # c\n", "a: [1, 2] # c\n",
    "a:\n  - {b: 1,\n     c: 2}\n", "a: \"\"\nb: ''\n", "a: |\n\nb: 1\n", "a: >\nb: 1\n",
    "? |\n  block key\n: v\n", "a: !!null ''\n", "a: !!str\n", "a: [~, null, ]\n",
]


def _pure(text: str) -> SourceDoc | SpecError:
    saved = loader._parse_fast
    loader._parse_fast = lambda _text, _file: None  # type: ignore[assignment]
    try:
        return loader.parse_yaml(text, "s.yaml")
    except SpecError as exc:
        return exc
    finally:
        loader._parse_fast = saved


def _check(text: str) -> bool:
    """Asserts the fast answer (if any) is the pure one; True when the fast path answered."""
    answers: list[SourceDoc | None] = []

    def recording(text: str, file: str) -> SourceDoc | None:
        answers.append(_parse_fast(text, file))
        return answers[-1]

    saved = loader._parse_fast
    loader._parse_fast = recording  # type: ignore[assignment]
    try:
        loader.parse_yaml(text, "s.yaml")
    except SpecError:
        pass
    finally:
        loader._parse_fast = saved
    fast = answers[0] if answers else None
    pure = _pure(text)
    if fast is None:
        return False
    assert isinstance(pure, SourceDoc), f"fast path accepted what the pure path refuses: " \
        f"{text[:300]!r}: {pure}"
    assert fast.data == pure.data, text[:300]
    assert _typed(fast.data) == _typed(pure.data), text[:300]
    assert fast.key_spans == pure.key_spans, text[:300]
    assert fast.value_spans == pure.value_spans, text[:300]
    return True


def _typed(value: object) -> object:
    """The value with each scalar's type (1 == 1.0 == True must not hide a difference)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_files_match_the_pure_path(path: Path) -> None:
    answered = _check(path.read_text(encoding="utf-8"))
    if path.parent.name == "examples":
        assert answered, "an example spec should take the fast path"


@pytest.mark.parametrize("text", CORNERS)
def test_corner_cases_match_the_pure_path(text: str) -> None:
    _check(text)


@pytest.mark.slow
def test_fuzz_mutants_match_the_pure_path(tmp_path: Path) -> None:
    answered = 0
    examples = sorted((REPO / "examples").glob("*.yaml"))
    for seed in range(400):
        text = examples[seed % len(examples)].read_text(encoding="utf-8")
        answered += _check(mutate(text, seed, tmp_path, 1 + seed % 3))
    assert answered > 50  # the mutants exercise the fast path, not only the fallback


def test_refusals_keep_their_located_errors() -> None:
    """Errors come from the pure path: same summary and position as before."""
    with pytest.raises(SpecError) as exc:
        loader.parse_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", "s.yaml")
    diag = exc.value.diagnostics[0]
    assert (diag.code, diag.span.line, diag.span.col) == ("load.duplicate-key", 4, 3)  # type: ignore[union-attr]
    assert 'duplicate key "c" (first defined on line 3)' in diag.summary


@pytest.mark.slow
def test_declines_deep_nesting_without_recursing() -> None:
    """Deep flow or block nesting never reaches the C composer (its recursion could
    overflow the C stack); the pure path answers with its own error."""
    for text in ("a: " + "[" * 5000 + "]" * 5000 + "\n", "- " * 5000 + "x\n"):
        assert depth_bound(text) > FAST_MAX_DEPTH
        assert fast_compose(text, new_yaml(MAX_NODES), MAX_NODES) is None
        with pytest.raises(SpecError):
            loader.parse_yaml(text, "s.yaml")


def test_declines_large_documents_and_alias_bombs() -> None:
    big = "a: [" + ", ".join(["1"] * (FAST_MAX_CHARS // 3)) + "]\n"
    assert fast_compose(big, new_yaml(MAX_NODES), MAX_NODES) is None
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(6))
    assert _parse_fast(bomb, "s.yaml") is None
    with pytest.raises(SpecError) as exc:
        loader.parse_yaml(bomb, "s.yaml")
    assert exc.value.diagnostics[0].code == "load.alias-bomb"


def test_values_limit_is_counted_on_the_fast_path() -> None:
    text = "a: [" + ",".join(["1"] * 60) + "]\n"
    assert fast_compose(text, new_yaml(MAX_NODES), 50) is None
    assert fast_compose(text, new_yaml(MAX_NODES), 100) is not None


def test_declines_off_the_main_thread() -> None:
    text = (REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml").read_text()
    assert fast_compose(text, new_yaml(MAX_NODES), MAX_NODES) is not None
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(
        fast_compose(text, new_yaml(MAX_NODES), MAX_NODES)))
    worker.start()
    worker.join()
    assert seen == [None]
