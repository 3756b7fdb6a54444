"""The compile cache read as untrusted input: what lies in its folder is data, never code,
and anything there that is not this very slot's entry, intact, is a miss.

Each attack of issue 20 is tried here: a planted pickle (it would create a file if it were
unpickled), a link at an entry's name, a folder above the cache that others may write to,
one spec's entry copied over another's, corrupt, truncated and forged entries, and a
compile refused for a literal credential (nothing of it may reach the disk)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ftspec.compiler import cache_files, pipeline
from ftspec.compiler.pipeline import Compiled, CompileOptions, SpecInput, compile_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
TOKEN = "hf_CacheCanaryT0kenAbCdEfGhIjKlMnOp"


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "on")
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache_files, "_WARNED", False)
    monkeypatch.setattr(cache_files, "_WARNING", None)
    return tmp_path / "cache" / "compiled"


def _spec(tmp_path: Path, name: str = "job.yaml", job: str = "llama32-1b-alpaca-lora") -> Path:
    path = tmp_path / name
    path.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "name: llama32-1b-alpaca-lora", f"name: {job}"), encoding="utf-8")
    past = time.time() - 10  # not "racy": see cache.keepable
    os.utime(path, (past, past))
    return path


class Counted:
    """Counts real compilations (a hit compiles nothing)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = pipeline._compile

        def counting(*args: object, **kwargs: object) -> Compiled:
            self.calls += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(pipeline, "_compile", counting)


def _entry(cached: Path) -> Path:
    (entry,) = cached.glob("*.json")
    return entry


class Planted:
    """Unpickling this creates the file ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, (f"touch {self.path}",))


def _forged(entry: Path, body: bytes) -> bytes:
    """``entry``'s header over ``body``, with the digest the header must carry for it (what
    only someone who can write the entry, this user, could make)."""
    header = json.loads(entry.read_bytes().partition(b"\n")[0])
    header["value"] = hashlib.sha256(body).hexdigest()
    return json.dumps(header).encode() + b"\n" + body


def test_a_planted_pickle_is_a_miss_and_never_run(cached: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "identity")
    entry = _entry(cached)
    ran = tmp_path / "unpickled"
    payload = pickle.dumps(Planted(ran))
    counted = Counted(monkeypatch)
    for planted in (payload, _forged(entry, payload),
                    entry.read_bytes().partition(b"\n")[0] + b"\n" + payload):
        entry.write_bytes(planted)
        again = compile_spec(spec, "identity")
        assert again == first
        assert not ran.exists()
    assert counted.calls == 3
    assert entry.read_bytes().startswith(b'{"format":')  # replaced by a good entry


def test_the_cache_code_imports_no_code_loader() -> None:
    """No module on the cache's path can unpickle (or unmarshal) what it reads."""
    import ast

    for path in (ROOT / "compiler" / "cache.py", ROOT / "compiler" / "cache_codec.py",
                 ROOT / "spec" / "ir.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.name.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in (node.names if isinstance(node, ast.Import)
                               else [ast.alias(node.module or "")])}
        assert not names & {"pickle", "marshal", "shelve", "dill", "cloudpickle"}, path


def test_an_entry_that_is_a_link_is_not_followed(cached: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    entry = _entry(cached)
    kept = cached / "elsewhere.data"
    entry.rename(kept)  # a good entry, private: only the link in the way
    entry.symlink_to(kept)
    counted = Counted(monkeypatch)
    assert compile_spec(spec, "identity").ok
    assert counted.calls == 1
    # a link planted at the name is replaced, never written through
    victim = tmp_path / "victim.txt"
    victim.write_text("mine", encoding="utf-8")
    entry.unlink()
    entry.symlink_to(victim)
    compile_spec(spec, "identity")
    assert victim.read_text(encoding="utf-8") == "mine"
    assert not entry.is_symlink() and entry.is_file()


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777])
def test_a_folder_above_that_others_may_write_turns_the_cache_off(
        cached: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(shared / "mine" / "ftspec"))
    (shared / "mine").mkdir(mode=0o700)
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    assert list(shared.rglob("*.json"))  # safe: kept
    os.chmod(shared, mode)
    counted = Counted(monkeypatch)
    compile_spec(spec, "identity")
    compile_spec(SpecInput(_spec(tmp_path, "other.yaml", "other")), "identity")
    assert counted.calls == 2
    assert len(list(shared.rglob("*.json"))) == 1  # nothing written either
    warning = cache_files.take_warning()
    assert warning is not None and f"others may write to {shared}" in warning
    assert cache_files.take_warning() is None


def test_a_sticky_shared_folder_is_safe_but_another_users_folder_is_not(
        cached: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a sticky folder (/tmp) nobody can rename what is not theirs; a folder of another
    user's can be changed by them at any time."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(sticky / "c"))
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    counted = Counted(monkeypatch)
    compile_spec(spec, "identity")
    assert counted.calls == 0 and cache_files.take_warning() is None
    os.chown(sticky / "c", 4321, 4321)
    compile_spec(spec, "identity")
    assert counted.calls == 1
    warning = cache_files.take_warning()
    assert warning is not None and "belongs to another user" in warning


def test_an_entry_of_another_user_or_readable_by_others_is_a_miss(
        cached: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    entry = _entry(cached)
    counted = Counted(monkeypatch)
    os.chown(entry, 4321, 4321)
    compile_spec(spec, "identity")
    assert counted.calls == 1
    os.chmod(_entry(cached), 0o640)
    compile_spec(spec, "identity")
    assert counted.calls == 2


def test_the_cli_warns_once_however_many_specs(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    specs = [str(_spec(tmp_path, f"s{i}.yaml", f"job-{i}")) for i in range(3)]
    env = {**os.environ, "FTSPEC_COMPILE_CACHE": "on", "FTSPEC_CACHE_DIR": str(shared / "c"),
           "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "ftspec.cli", "validate", *specs], env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "compile cache off" in line]
    assert lines == [(f"warning: compile cache off: others may write to {shared} "
                     "(FTSPEC_CACHE_DIR names another folder; FTSPEC_COMPILE_CACHE=off turns "
                     "the cache off quietly)")]
    assert not (shared / "c").exists()


def test_an_entry_copied_over_another_specs_is_a_miss(cached: Path, tmp_path: Path) -> None:
    a, b = SpecInput(_spec(tmp_path, "a.yaml", "job-a")), SpecInput(_spec(tmp_path, "b.yaml",
                                                                          "job-b"))
    compile_spec(a, "artifacts")
    slot_b = pipeline._slot(b, "artifacts", CompileOptions())
    assert slot_b is not None
    (entry_a,) = cached.glob("*.json")
    (cached / f"{slot_b.key}.json").write_bytes(entry_a.read_bytes())
    os.chmod(cached / f"{slot_b.key}.json", 0o600)
    got = compile_spec(b, "artifacts")
    assert got.job is not None and got.job.name == "job-b"
    assert got.artifacts[0].obj is not None
    assert got.artifacts[0].obj["metadata"]["name"] == "job-b"


def _retyped(body: bytes) -> bytes:
    data = json.loads(body)
    data["job"]["nodes"] = "1"  # a string where an int is declared
    return json.dumps(data).encode()


def _extra_field(body: bytes) -> bytes:
    data = json.loads(body)
    data["job"]["__class__"] = "os.system"
    return json.dumps(data).encode()


def _missing_field(body: bytes) -> bytes:
    data = json.loads(body)
    del data["job"]["memory"]
    return json.dumps(data).encode()


def _bad_member(body: bytes) -> bytes:
    data = json.loads(body)
    data["job"]["device"] = "tpu"  # not one of the Literal's values
    return json.dumps(data).encode()


def _bad_span(body: bytes) -> bytes:
    data = json.loads(body)
    pairs = json.loads(data["doc"]["key_spans"])  # a source map is kept as text of its own
    pairs[0][1] = [pairs[0][1][0], "one", 1]
    data["doc"]["key_spans"] = json.dumps(pairs)
    return json.dumps(data).encode()


def _deep(body: bytes) -> bytes:
    data = json.loads(body)
    data["doc"]["data"] = "DEEP"
    return json.dumps(data).encode().replace(
        b'"DEEP"', b"[1, " + b'{"l": [' * 100_000 + b"]}" * 100_000 + b"]")


BROKEN = {
    "empty": lambda raw, entry: b"",
    "truncated": lambda raw, entry: raw[: len(raw) // 2],
    "header only": lambda raw, entry: raw.partition(b"\n")[0],
    "no header": lambda raw, entry: raw.partition(b"\n")[2],
    "one byte changed": lambda raw, entry: raw[:-20] + bytes([raw[-20] ^ 1]) + raw[-19:],
    "not json": lambda raw, entry: b"\x00\xff garbage \n \x80",
    "other format": lambda raw, entry: raw.replace(b'{"format":2', b'{"format":1', 1),
    "a file changed since": lambda raw, entry: raw.replace(b'"deps":[[', b'"deps":[["/etc/'
                                                           b'hostname","0"],[', 1),
    "wrong type (forged)": lambda raw, entry: _forged(entry, _retyped(raw.partition(b"\n")[2])),
    "extra field (forged)": lambda raw, entry: _forged(entry, _extra_field(
        raw.partition(b"\n")[2])),
    "missing field (forged)": lambda raw, entry: _forged(entry, _missing_field(
        raw.partition(b"\n")[2])),
    "not a member (forged)": lambda raw, entry: _forged(entry, _bad_member(
        raw.partition(b"\n")[2])),
    "nested too deep (forged)": lambda raw, entry: _forged(entry, _deep(
        raw.partition(b"\n")[2])),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", list(BROKEN))
def test_a_corrupt_or_forged_entry_is_a_miss(cached: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "artifacts")
    entry = _entry(cached)
    entry.write_bytes(BROKEN[how](entry.read_bytes(), entry))
    counted = Counted(monkeypatch)
    again = compile_spec(spec, "artifacts")
    assert counted.calls == 1
    assert again == first and again.artifacts == first.artifacts


def _secret_spec(tmp_path: Path) -> Path:
    path = _spec(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace(
        "labels: {team: nlp}", f"labels: {{team: nlp, token: {TOKEN}}}"), encoding="utf-8")
    past = time.time() - 10
    os.utime(path, (past, past))
    return path


def _on_disk(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_a_compile_refused_for_a_secret_leaves_nothing_on_disk(cached: Path,
                                                               tmp_path: Path) -> None:
    path = _secret_spec(tmp_path)
    assert "labels: {team: nlp, token: " in path.read_text(encoding="utf-8")
    for stage in ("identity", "checks", "artifacts"):
        refused = compile_spec(SpecInput(path), stage)
        assert any(d.code == "rule.secret-literal" for d in refused.errors)
        compile_spec(refused, "artifacts")  # continued, as plan does
    flagged = SpecInput(_spec(tmp_path, "flag.yaml"), sets=(f"metadata.labels.x={TOKEN}",))
    assert any(d.code in ("override.secret", "rule.secret-literal")
               for d in compile_spec(flagged, "checks").errors)
    assert _on_disk(tmp_path / "cache", TOKEN) == []
    assert not list(cached.glob("*.json"))


@pytest.mark.slow
def test_the_cli_keeps_no_trace_of_a_refused_secret(tmp_path: Path) -> None:
    path = _secret_spec(tmp_path)
    env = {**os.environ, "FTSPEC_COMPILE_CACHE": "on", "FTSPEC_CACHE_DIR": str(tmp_path / "c"),
           "NO_COLOR": "1"}
    for command in (["validate"], ["plan", "--json"], ["explain"]):
        done = subprocess.run([sys.executable, "-m", "ftspec.cli", *command, str(path)],
                              env=env, capture_output=True, text=True, check=False,
                              timeout=120)
        assert done.returncode != 0
        assert TOKEN not in done.stdout + done.stderr
    assert _on_disk(tmp_path / "c", TOKEN) == []


def test_a_forged_entry_with_a_good_body_is_read(cached: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The control of the forged cases above: re-signed as they are, an unchanged body is
    a hit, so those misses come from the decoder's checks, not from the forging."""
    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "artifacts")
    entry = _entry(cached)
    body = json.dumps(json.loads(entry.read_bytes().partition(b"\n")[2])).encode()
    entry.write_bytes(_forged(entry, body))
    counted = Counted(monkeypatch)
    assert compile_spec(spec, "artifacts") == first
    assert counted.calls == 0


def test_a_forged_source_map_reads_as_empty(cached: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A document's source map is checked when first read (a warm plan never reads it):
    re-signed with a span of the wrong type, it reads as empty, positions fall back to the
    file's first line, and nothing fails."""
    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "identity")
    entry = _entry(cached)
    entry.write_bytes(_forged(entry, _bad_span(entry.read_bytes().partition(b"\n")[2])))
    counted = Counted(monkeypatch)
    again = compile_spec(spec, "identity")
    assert counted.calls == 0
    assert again.doc is not None and first.doc is not None
    assert again.doc.key_spans == {} and again.doc.value_spans == first.doc.value_spans
    assert str(again.doc.span_of(("training",), key=True)) == f"{spec.path}:1:1"
