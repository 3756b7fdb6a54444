"""Bad input never crashes: every ``tests/invalid/NAME.yaml`` gives exactly ``NAME.expected``.

Adding a case means adding two files. Regenerate the expected output for review with
``pytest --update-golden`` (or ``FTSPEC_UPDATE_GOLDEN=1 pytest``). The expected text is
what ``NO_COLOR=1 ftspec validate NAME.yaml`` prints (stdout then stderr) when run inside
``tests/invalid``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from ftspec.cli.main import main

INVALID = Path(__file__).resolve().parents[1] / "invalid"
CASES = sorted(p.stem for p in INVALID.glob("*.yaml"))
LITERAL_TOKENS = ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "my-very-secret-value")


def _updating(request: pytest.FixtureRequest) -> bool:
    flag = request.config.getoption("--update-golden", default=False)
    return bool(flag) or os.environ.get("FTSPEC_UPDATE_GOLDEN") == "1"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def in_invalid(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(INVALID)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return INVALID


def test_enough_cases() -> None:
    assert len(CASES) >= 45, f"only {len(CASES)} invalid cases in {INVALID}"


@pytest.mark.parametrize("name", CASES)
def test_invalid_case(name: str, in_invalid: Path, capsys: pytest.CaptureFixture[str],
                      request: pytest.FixtureRequest) -> None:
    code, output = _run(["validate", f"{name}.yaml"], capsys)
    expected_file = in_invalid / f"{name}.expected"
    if _updating(request):
        expected_file.write_text(output, encoding="utf-8")
    assert expected_file.exists(), (
        f"{expected_file.name} is missing; run `pytest --update-golden` and review it"
    )
    assert output == expected_file.read_text(encoding="utf-8")
    assert code == 1
    assert "Traceback" not in output
    assert f"{name}.yaml:" in output, "every diagnostic names the file"
    for token in LITERAL_TOKENS:
        assert token not in output, "a literal secret was echoed"


def test_every_expected_has_a_case() -> None:
    orphans = sorted(p.name for p in INVALID.glob("*.expected") if p.stem not in CASES)
    assert not orphans, f"expected files without a case: {orphans}"


def test_console_script_matches_in_process_output() -> None:
    """One real `ftspec validate` over every case prints the goldens back to back."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ftspec.cli", "validate", *[f"{n}.yaml" for n in CASES]],
        cwd=INVALID, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    expected = "".join((INVALID / f"{n}.expected").read_text(encoding="utf-8") for n in CASES)
    expected += f"0 of {len(CASES)} files valid\n"
    assert proc.returncode == 1
    assert proc.stderr == ""
    assert proc.stdout == expected


# Generated cases: too large, binary or hostile to commit as files.

def test_non_utf8_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    Path("latin1.yaml").write_bytes(
        b"apiVersion: ftspec.dev/v1alpha1\nkind: FineTune\nmetadata:\n  name: caf\xe9\n"
    )
    code, output = _run(["validate", "latin1.yaml"], capsys)
    assert code == 1
    assert output == (
        "latin1.yaml:4:12: error: file is not valid UTF-8 (byte 0xe9); save it as UTF-8\n"
    )


def test_ten_megabyte_file_is_refused_before_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    line = b"# padding padding padding padding padding padding padding padding padding\n"
    Path("huge.yaml").write_bytes(b"apiVersion: ftspec.dev/v1alpha1\n" + line * (10_000_000 // len(line)))
    start = time.perf_counter()
    code, output = _run(["validate", "huge.yaml"], capsys)
    elapsed = time.perf_counter() - start
    size = Path("huge.yaml").stat().st_size
    assert code == 1
    assert output == (
        f"huge.yaml:1:1: error: file is {size:,} bytes; specs are limited to 1,048,576 bytes\n"
    )
    assert elapsed < 5, "the size check must not read and parse the file"


ALIAS_BOMB = """\
apiVersion: ftspec.dev/v1alpha1
kind: FineTune
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_alias_bomb_is_rejected_fast_with_bounded_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    Path("bomb.yaml").write_text(ALIAS_BOMB, encoding="utf-8")
    main(["validate", "--help"])  # import the command's modules before measuring
    capsys.readouterr()
    tracemalloc.start()
    start = time.perf_counter()
    try:
        code, output = _run(["validate", "bomb.yaml"], capsys)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 1
    assert output == (
        "bomb.yaml:1:1: error: document expands to more than 100,000 values through aliases; "
        "specs must stay small\n"
    )
    # 9**9 = 387 million strings if expanded; the check must not expand anything.
    assert elapsed < 1.0, f"took {elapsed:.2f}s"
    assert peak < 50 * 1024 * 1024, f"peak traced memory {peak / 2**20:.1f} MiB"


def test_recursive_alias_does_not_hang_or_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    Path("loop.yaml").write_text("apiVersion: ftspec.dev/v1alpha1\na: &a\n  b: *a\n")
    code, output = _run(["validate", "loop.yaml"], capsys)
    assert code == 1
    assert "Traceback" not in output
    assert output.startswith("loop.yaml:")
