"""The compile cache: a kept result is reused only while everything it was computed from
is unchanged, and a cache folder others could write to is never read."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ftspec.compiler import cache, pipeline
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache on, in a folder of this test's own."""
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "on")
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "compiled"


def _settled(path: Path) -> Path:
    """Date the file back so it is not "racy" (changed within the last second)."""
    past = time.time() - 10
    os.utime(path, (past, past))
    return path


def _spec(tmp_path: Path, text: str | None = None, name: str = "job.yaml") -> Path:
    spec = tmp_path / name
    spec.write_text(text if text is not None else EXAMPLE.read_text(encoding="utf-8"),
                    encoding="utf-8")
    return _settled(spec)


def _forbid_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled although the cache holds the result")

    monkeypatch.setattr(pipeline, "_compile", fail)


def test_second_compile_comes_from_the_cache(cached: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "artifacts")
    assert first.ok and first.artifacts
    assert len(list(cached.glob("*.json"))) == 1
    _forbid_compiling(monkeypatch)
    again = compile_spec(spec, "artifacts")
    assert again.artifacts == first.artifacts
    assert again.diagnostics == first.diagnostics
    assert again.job is not None and first.job is not None
    assert again.job.spec_hash == first.job.spec_hash
    assert again is not first


def test_continued_stages_are_kept_too(cached: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    opts = CompileOptions(schema="on-error", trainer_version="v2.1")
    first = compile_spec(compile_spec(spec, "identity"), "artifacts", opts)
    _forbid_compiling(monkeypatch)
    again = compile_spec(compile_spec(spec, "identity"), "artifacts", opts)
    assert again.artifacts == first.artifacts
    assert again.doc is not None and again.doc == first.doc  # kept once, in the first stage
    assert again == first
    assert again.job is not None and again.job.trainer_version == "v2.1"


def test_an_edited_spec_is_compiled_again(cached: Path, tmp_path: Path) -> None:
    path = _spec(tmp_path)
    before = compile_spec(SpecInput(path), "artifacts")
    path.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "name: llama32-1b-alpaca-lora", "name: renamed-job"), encoding="utf-8")
    _settled(path)
    after = compile_spec(SpecInput(path), "artifacts")
    assert before.job is not None and after.job is not None
    assert (before.job.name, after.job.name) == ("llama32-1b-alpaca-lora", "renamed-job")


def test_an_edit_that_breaks_the_spec_is_reported(cached: Path, tmp_path: Path) -> None:
    path = _spec(tmp_path)
    assert compile_spec(SpecInput(path), "checks").ok
    path.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "apiVersion: ftspec.dev/v1alpha1", "apiVersion: ftspec.dev/v1alpha1\nbogus: 1"),
        encoding="utf-8")
    _settled(path)
    broken = compile_spec(SpecInput(path), "checks")
    assert not broken.ok
    assert any("bogus" in d.format() for d in broken.errors)


def test_overlays_and_sets_are_part_of_the_answer(cached: Path, tmp_path: Path) -> None:
    path = _spec(tmp_path)
    overlay = _spec(tmp_path, "metadata:\n  namespace: team-a\n", "overlay.yaml")
    with_overlay = compile_spec(SpecInput(path, (overlay,)), "identity")
    assert with_overlay.job is not None and with_overlay.job.namespace == "team-a"
    overlay.write_text("metadata:\n  namespace: team-b\n", encoding="utf-8")
    _settled(overlay)
    changed = compile_spec(SpecInput(path, (overlay,)), "identity")
    assert changed.job is not None and changed.job.namespace == "team-b"
    flagged = compile_spec(SpecInput(path, (overlay,), ("metadata.namespace=team-c",)),
                           "identity")
    assert flagged.job is not None and flagged.job.namespace == "team-c"


def test_any_file_read_while_compiling_is_checked(cached: Path, tmp_path: Path) -> None:
    extra = _spec(tmp_path, "one", "template.jinja")
    slot = cache.slot_for("test", str(extra))
    assert slot is not None
    with cache.recording() as opened:
        value = extra.read_text(encoding="utf-8")
    deps = cache.deps_of(opened)
    assert [name for name, _ in deps] == [str(extra)]
    cache.store(slot, value, deps)
    assert cache.load(slot, str) == ("one", deps)
    extra.write_text("two", encoding="utf-8")
    assert cache.load(slot, str) is None
    extra.unlink()
    assert cache.load(slot, str) is None


def test_files_of_other_threads_are_not_recorded(cached: Path, tmp_path: Path) -> None:
    import threading

    other = _spec(tmp_path, "x", "other.txt")
    with cache.recording() as opened:
        reader = threading.Thread(target=other.read_bytes)
        reader.start()
        reader.join()
    assert str(other) not in opened


def test_a_file_changed_during_the_run_is_not_kept(cached: Path, tmp_path: Path) -> None:
    path = _spec(tmp_path)
    os.utime(path)  # modified "now": the content read may not be the content hashed
    result = compile_spec(SpecInput(path), "identity")
    assert result.ok
    assert not list(cached.glob("*.json"))


def test_other_code_or_packages_give_another_key(cached: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    code = tmp_path / "code"
    code.mkdir()
    module = code / "rules.py"
    module.write_text("A = 1\n", encoding="utf-8")
    monkeypatch.setattr(cache, "_code_roots", lambda: [code])
    monkeypatch.setattr(cache, "_ENVIRONMENT", None)
    first = cache.slot_for("x")
    monkeypatch.setattr(cache, "_ENVIRONMENT", None)
    module.write_text("A = 22\n", encoding="utf-8")
    second = cache.slot_for("x")
    assert first is not None and second is not None and first.key != second.key
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(cache, "_package_dirs", lambda: [str(site)])
    monkeypatch.setattr(cache, "_ENVIRONMENT", None)
    third = cache.slot_for("x")
    monkeypatch.setattr(cache, "_ENVIRONMENT", None)
    (site / "newpkg-1.0.dist-info").mkdir()
    os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 1_000_000_000))
    fourth = cache.slot_for("x")
    assert third is not None and fourth is not None and third.key != fourth.key


def test_a_folder_others_can_write_is_never_read(cached: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    (entry,) = cached.glob("*.json")
    os.chmod(cached, 0o777)
    slot = pipeline._slot(spec, "identity", CompileOptions())
    assert slot is not None
    assert cache.load(slot, pipeline.Compiled) is None
    os.chmod(cached, 0o700)
    assert cache.load(slot, pipeline.Compiled) is not None
    os.chmod(entry, 0o644)
    assert cache.load(slot, pipeline.Compiled) is None


def test_a_broken_entry_is_a_miss(cached: Path, tmp_path: Path) -> None:
    spec = SpecInput(_spec(tmp_path))
    compile_spec(spec, "identity")
    (entry,) = cached.glob("*.json")
    entry.write_bytes(b"not an entry")
    again = compile_spec(spec, "identity")
    assert again.ok


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "off")
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    assert compile_spec(SpecInput(_spec(tmp_path)), "identity").ok
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_the_cli_answers_the_same_and_sees_edits(tmp_path: Path) -> None:
    """Two `ftspec validate` runs (the second from the cache), then an edit is reported."""
    path = _spec(tmp_path)
    env = {**os.environ, "FTSPEC_COMPILE_CACHE": "on", "FTSPEC_CACHE_DIR": str(tmp_path / "c"),
           "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "ftspec.cli", "validate", str(path)]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert list((tmp_path / "c" / "compiled").glob("*.json"))
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, first.stderr)
    path.write_text(path.read_text(encoding="utf-8").replace("learning_rate: 3.0e-4", "learning_rate: -3.0e-4"),
                    encoding="utf-8")
    _settled(path)
    third = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert third.returncode == 1
    assert f"{path}:" in third.stdout + third.stderr


def test_a_fifo_is_never_read_again_nor_kept(cached: Path, tmp_path: Path) -> None:
    """A spec path that is a pipe: hashing it would block or consume what the compiler
    read, so the result is not kept (and nothing waits for a writer)."""
    import signal

    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    signal.alarm(20)  # a blocking read would otherwise hang the suite
    try:
        result = compile_spec(SpecInput(fifo), "identity")
    finally:
        signal.alarm(0)
    assert result.cache is not None
    assert dict(result.cache.deps)[str(fifo)] == cache.UNKEEPABLE
    assert not list(cached.glob("*.json"))


def test_a_kept_job_reads_its_spec_on_first_use(cached: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The Job comes back with every derived value; its spec, unpickled only when read,
    equals the one compiled, and the Job still compares and copies as a dataclass."""
    import dataclasses

    spec = SpecInput(_spec(tmp_path))
    first = compile_spec(spec, "artifacts").job
    _forbid_compiling(monkeypatch)
    again = compile_spec(spec, "artifacts").job
    assert first is not None and again is not None
    assert "spec" not in vars(again)
    assert again.summary == first.summary and again.summary["method"] == "lora"
    assert again.spec == first.spec
    assert "spec" in vars(again)
    assert again == first
    moved = dataclasses.replace(again, trainer_version="v2.1")
    assert moved.spec == first.spec and moved.trainer_version == "v2.1"


WARM_PLAN_PROBE = """
import json, sys
from pathlib import Path
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
from ftspec.reconciler.desired import _desired
from ftspec.reconciler.kubernetes.render import render
first = compile_spec(SpecInput(Path(sys.argv[1])), "identity", CompileOptions(schema="on-error"))
done = compile_spec(first, "artifacts", CompileOptions(schema="on-error", trainer_version="v2.1"))
objects = render(_desired(done))
print(json.dumps({"ok": done.ok, "kinds": [o["kind"] for o in objects],
                  "pydantic": "pydantic" in sys.modules}))
"""


@pytest.mark.slow
def test_a_warm_plan_does_not_import_the_spec_models(tmp_path: Path) -> None:
    """What `plan` does with specs unchanged since they were compiled (the compile stages
    and rendering the objects) comes from the cache without importing pydantic; the first
    run, which compiles, does import it (so the probe can see the difference)."""
    import json

    path = _spec(tmp_path)
    env = {**os.environ, "FTSPEC_COMPILE_CACHE": "on", "FTSPEC_CACHE_DIR": str(tmp_path / "c")}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", WARM_PLAN_PROBE, str(path)], env=env,
                              capture_output=True, text=True, check=False, timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
    assert runs[0] == {"ok": True, "kinds": ["TrainJob"], "pydantic": True}
    assert runs[1] == {"ok": True, "kinds": ["TrainJob"], "pydantic": False}


GOLDEN = ROOT / "tests" / "golden"
ROUND_TRIPS = [(example.name, target.name) for example in sorted(ROOT.glob("examples/*.yaml"))
               for target in sorted((GOLDEN / example.stem).iterdir()) if target.is_dir()]


@pytest.mark.slow
@pytest.mark.parametrize(("example", "target"), ROUND_TRIPS)
def test_every_example_comes_back_equal(cached: Path, example: str, target: str) -> None:
    """The key correctness test of the entry format: each example, for each of its golden
    targets, at each stage, stored and read back, equals what was compiled (jobs with their
    spec, artifacts with their text, diagnostics, the document and its source map)."""
    source = SpecInput(ROOT / "examples" / example)
    for stage, opts in (("identity", CompileOptions()), ("checks", CompileOptions()),
                        ("artifacts", CompileOptions(target=target)),
                        ("artifacts", CompileOptions(target=target, schema="on-error",
                                                     trainer_version="v2.1"))):
        slot = pipeline._slot(source, stage, opts)
        assert slot is not None
        compiled = pipeline._compile(source, stage, opts)
        cache.store(slot, compiled, ())
        kept = cache.load(slot, pipeline.Compiled)
        assert kept is not None, (stage, opts)
        again = kept[0]
        assert again is not compiled
        assert again.diagnostics == compiled.diagnostics
        assert again.artifacts == compiled.artifacts
        assert [a.content for a in again.artifacts] == [a.content for a in compiled.artifacts]
        assert again.doc == compiled.doc and again.source == compiled.source
        assert compiled.job is not None and again.job is not None
        assert "spec" not in vars(again.job)
        assert again.job == compiled.job and again.job.spec == compiled.job.spec
        assert again == compiled


@pytest.mark.parametrize("text", ["apiVersion: ftspec.dev/v1alpha1\nkind: FineTune\nbogus: 1\n",
                                  "a: [unclosed\n", "1: {2: [3, 4]}\nx: .nan\n"])
def test_a_refused_spec_comes_back_equal(cached: Path, tmp_path: Path, text: str) -> None:
    """Results without a Job, without a document, with odd values in the document."""
    source = SpecInput(_spec(tmp_path, text))
    slot = pipeline._slot(source, "checks", CompileOptions())
    assert slot is not None
    compiled = pipeline._compile(source, "checks", CompileOptions())
    assert not compiled.ok
    cache.store(slot, compiled, ())
    kept = cache.load(slot, pipeline.Compiled)
    assert kept is not None and kept[0] == compiled


def test_any_data_keeps_tuples_and_keys_json_cannot_name() -> None:
    """``Any`` values (a document's data, a manifest): plain JSON as it is, anything else
    with each container's kind, so a user's mapping that looks like a tag stays a mapping."""
    import json
    from typing import Any

    from ftspec.compiler import cache_codec

    for value in ({1: (2, [3, {None: 4.5, True: "\ud800"}]), "l": ["x"]},
                  {"l": [1, 2]}, {"m": [[1, 2]]}, [(), [], {}], ("x",), float("inf"), None):
        data = json.loads(json.dumps(cache_codec.encode(value, Any)))
        assert cache_codec.decode(data, Any) == value
        assert type(cache_codec.decode(data, Any)) is type(value)
    for bad in ([2, {}], [1, {"x": []}], [1, {"m": [[[1], 2]]}], [0], "text", [True, 1]):
        with pytest.raises(cache_codec.Unreadable):
            cache_codec.decode(bad, Any)
