"""A spec that carries a credential is refused at its line, and nothing ftspec writes holds
it: no saved plan, no compiled artifact, no compile-cache entry, no run record, no imported
spec, and no line of output."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.cli.main import main

from security.test_secret_formats import NEW_FORMATS

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny-local.yaml"
TORCHTUNE_CONFIG = "llama3_2/1B_lora_single_device.yaml"

KINDS = {name: value for name, (value, _what) in NEW_FORMATS.items()}
KINDS["named-DB_PASS"] = "Zx9-db-passw0rd"
KINDS["named-MY_SERVICE_KEY"] = "svc0key0value9"
"""One credential of each new kind; ``named-NAME``: an ordinary value under NAME."""


def _spec(folder: Path, kind: str, as_key: bool = False) -> tuple[Path, int, int]:
    """The tiny example with the credential in it; the credential's line and column."""
    secret = KINDS[kind]
    text = TINY.read_text()
    anchor = "deploy:\n  target: local"
    assert anchor in text
    if kind.startswith("named-"):
        entry = f"    {kind.removeprefix('named-')}: {secret}\n"
        col = entry.index(secret) + 1
    elif as_key:
        entry = f"    {secret}: x\n"
        col = 5
    else:
        entry = f"    NOTE: {secret}\n"
        col = entry.index(secret) + 1
    head, tail = text.split(anchor, 1)
    text = head + anchor + tail.split("\n", 1)[0] + "\n  local:\n    env:\n" + entry + \
        tail.split("\n", 1)[1]
    line = text[: text.index(entry)].count("\n") + 1
    path = folder / "spec.yaml"
    _write_old(path, text)
    return path, line, col


def _write_old(path: Path, text: str) -> None:
    """Write ``text`` dated a minute back: the compile cache keeps no result computed from
    a file changed within the last moments, and this test must see what it keeps."""
    import os
    import time

    path.write_text(text)
    os.utime(path, (time.time() - 60, time.time() - 60))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def _files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*")
            if p.is_file() and p.name != "spec.yaml" and secret.encode() in p.read_bytes()]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private working folder, cache and state: everything ftspec writes lands here."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "on")
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_validate_refuses_at_the_line_with_the_reference_to_use(
        capsys: pytest.CaptureFixture[str], workdir: Path, kind: str) -> None:
    spec, line, col = _spec(workdir, kind)
    code, out = _run(capsys, "validate", str(spec))
    assert code == 1, out
    assert f"spec.yaml:{line}:{col}: error:" in out, out
    assert "secrets: {" in out and ("secretRef" in out and "env:" in out), out
    if kind.startswith("named-"):
        var = kind.removeprefix("named-")
        assert f"secrets: {{{var.lower()}: {{env: {var}}}}}" in out, out
    assert KINDS[kind] not in out


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "as_key"), [
    (kind, as_key) for kind in sorted(KINDS) for as_key in (False, True)
    if not (as_key and kind.startswith("named-"))])  # a named value's key is its name
def test_nothing_written_holds_the_credential(capsys: pytest.CaptureFixture[str],
                                              workdir: Path, kind: str, as_key: bool) -> None:
    secret = KINDS[kind]
    spec, line, _col = _spec(workdir, kind, as_key)
    commands = [
        ["validate", str(spec)], ["validate", str(spec), "--json"],
        ["explain", str(spec), "--json"],
        ["plan", str(spec), "--out", str(workdir / "plan.json")],
        ["plan", str(spec), "--json"],
        ["compile", str(spec), "--target", "torchtune", "--out", str(workdir / "out")],
        ["compile", str(spec), "--target", "torchtune"],
        ["apply", str(spec), "--auto-approve"],
    ]
    for args in commands:
        code, out = _run(capsys, *args)
        assert code == 1, (args, out)
        assert secret not in out, args
        assert f"spec.yaml:{line}:" in out or "--json" in args, (args, out)
    assert not (workdir / "plan.json").exists()
    assert _files_holding(workdir, secret) == []


def test_the_cache_keeps_valid_specs_so_the_check_above_can_fail(
        capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    """The cache is on in ``workdir``: a valid spec's compile is kept there (so an empty
    cache above means the refused ones were not kept, not that nothing ever is)."""
    spec = workdir / "spec.yaml"
    _write_old(spec, TINY.read_text().replace("name: tiny-local", "name: tiny-kept-9f2c"))
    code, out = _run(capsys, "validate", str(spec))
    assert code == 0, out
    assert _files_holding(workdir / "cache", "tiny-kept-9f2c") != []


def _torchtune_config(folder: Path, extra: str) -> Path:
    import importlib.util

    found = importlib.util.find_spec("recipes")
    if found is None or found.origin is None:
        pytest.skip("torchtune's shipped configs are not installed")
    shipped = Path(found.origin).parent / "configs" / TORCHTUNE_CONFIG
    path = folder / "tt.yaml"
    path.write_text(shipped.read_text() + extra)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_import_refuses_a_credential_and_writes_nothing(
        capsys: pytest.CaptureFixture[str], workdir: Path, kind: str) -> None:
    """torchtune keeps keys it has no field for under overrides.torchtune: a literal key,
    a value under a credential's name and a KEY=VALUE argument would be copied."""
    secret = KINDS[kind]
    name = kind.removeprefix("named-") if kind.startswith("named-") else "extra"
    config = _torchtune_config(workdir, f"my_settings:\n  {name}: {secret}\n")
    lines = config.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if secret in text)
    out_spec = workdir / "imported.yaml"
    for args in (["import", "torchtune", str(config), "-o", str(out_spec)],
                 ["import", "torchtune", str(config)],
                 ["import", "torchtune", str(config), "--json"]):
        code, out = _run(capsys, *args)
        assert code == 1, out
        assert secret not in out
        assert f"tt.yaml:{line}:" in out or "--json" in args, out
    assert not out_spec.exists()
    clean = _torchtune_config(workdir, "")
    code, out = _run(capsys, "import", "torchtune", str(clean), f"my_settings.{name}={secret}",
                     "-o", str(out_spec))
    assert code == 1 and secret not in out and "--set[0]:1:1" in out, out
    assert not out_spec.exists()
    code, out = _run(capsys, "import", "torchtune", str(clean), "-o", str(out_spec))
    assert code == 0 and out_spec.exists(), out  # the same import without it is written


def test_a_job_printing_a_credential_is_redacted_by_logs(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``logs`` shows what the job printed: that passes through ``redact`` too (a pure
    rendering test: the backend is a stand-in that yields the job's lines)."""
    from ftspec.cli import live

    printed = [f"step 1 loss 2.0 {KINDS['google']}", "DB_PASS=Zx9-db-passw0rd", "done"]

    class Backend:
        def logs(self, *_args: object, **_kwargs: object) -> list[str]:
            return printed

    monkeypatch.setattr(live, "prepare_specs", lambda *a, **k: (Backend(), [None]))
    code, out = _run(capsys, "logs", str(TINY))
    assert code == 0, out
    assert out.splitlines() == ["step 1 loss 2.0 <redacted>", "DB_PASS=<redacted>", "done"]
