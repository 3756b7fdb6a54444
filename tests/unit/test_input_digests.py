"""Content identity of a job's inputs (``reconciler.inputs``): digests of files and
folders, their cache, the applied record's copy, and what a plan makes of a change."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler import engine, inputs
from ftspec.reconciler.applied import AppliedRecord, decode, encode
from ftspec.reconciler.inputs import InputState, changed, digest_path, file_digest
from ftspec.reconciler.kubernetes.planner import ObjectInput, decide, planned
from ftspec.reconciler.model import Action
from unit.test_reconciler_engine import live_of, trainjob


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FTSPEC_DIGEST_CACHE", raising=False)


def test_a_file_digest_is_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_bytes(b'{"input": "a", "output": "b"}\n')
    assert file_digest(data) == hashlib.sha256(data.read_bytes()).hexdigest()


def test_a_warm_digest_reads_no_byte_and_an_edit_in_place_is_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "train.jsonl"
    data.write_bytes(b"x" * 4096)
    first = file_digest(data)
    reads: list[Any] = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda fh, name: reads.append(fh) or real(fh, name))
    assert file_digest(data) == first and not reads  # from the cache
    stat = data.stat()
    with data.open("r+b") as fh:  # one byte flipped, size and modification time put back
        fh.write(b"y")
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert data.stat().st_mtime_ns == stat.st_mtime_ns
    assert file_digest(data) != first and len(reads) == 1  # the change time gave it away


def test_a_cache_entry_of_another_file_state_is_not_used(tmp_path: Path) -> None:
    data = tmp_path / "w.bin"
    data.write_bytes(b"weights")
    digest = file_digest(data)
    folder = Path(os.environ["FTSPEC_CACHE_DIR"]) / "digests"
    (entry,) = folder.iterdir()
    planted = json.loads(entry.read_text())
    planted["sha256"] = "0" * 64
    planted["state"][3] += 1  # an entry for another size
    entry.write_text(json.dumps(planted))
    assert file_digest(data) == digest


def test_a_folder_digest_covers_names_and_contents_not_hidden_entries(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "model.safetensors").write_bytes(b"\0" * 64)
    first = digest_path(model)
    (model / ".cache").mkdir()
    (model / ".cache" / "download.lock").write_text("x")
    (model / ".hidden").write_text("y")
    assert digest_path(model) == first
    (model / "sub" / "model.safetensors").write_bytes(b"\1" + b"\0" * 63)
    second = digest_path(model)
    assert second != first
    (model / "sub" / "model.safetensors").rename(model / "sub" / "other.safetensors")
    assert digest_path(model) != second


def test_linked_files_are_read_through(tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"abc")
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "model.safetensors").symlink_to(blob)
    before = digest_path(snap)
    blob.write_bytes(b"abd")
    assert digest_path(snap) != before


REPO = Path(__file__).resolve().parents[2]


def _spec(tmp_path: Path, *, identity: str | None = None) -> Any:
    """``examples/tiny-local.yaml`` over files of ``tmp_path`` (``identity`` on its dataset)."""
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "model" / "tokenizer.model").write_bytes(b"tok")
    (tmp_path / "dataset.jsonl").write_text('{"input": "a", "output": "b"}\n' * 3)
    text = (REPO / "examples" / "tiny-local.yaml").read_text().replace(
        "file://.ftspec/tiny/llama2/", "file://")
    if identity is not None:
        text = text.replace("    format: alpaca", f"    identity: {identity}\n    format: alpaca")
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    compiled = compile_spec(SpecInput(path), "identity", CompileOptions(schema="on-error"))
    assert compiled.job is not None, [d.format() for d in compiled.diagnostics]
    return compiled.job


def test_states_of_a_job(tmp_path: Path) -> None:
    job = _spec(tmp_path)
    found = {s.field: s for s in inputs.states(job, tmp_path)}
    assert found["data.train.uri"].rows == 3
    assert found["data.train.uri"].sha256 == file_digest(tmp_path / "dataset.jsonl")
    assert found["model.uri"].sha256 == digest_path(tmp_path / "model")
    assert found["model.tokenizer.uri"].sha256 == file_digest(tmp_path / "model" /
                                                              "tokenizer.model")
    assert not any(s.unchecked for s in found.values())


def test_a_job_read_back_from_the_compile_cache_gives_its_states_without_its_spec(
        tmp_path: Path) -> None:
    """A warm plan reads a cached Job, whose spec is kept as text and validated (pydantic)
    only when read: the inputs come from the IR, so they leave it unread."""
    from ftspec.compiler import cache_codec
    from ftspec.spec.ir import Job

    job = _spec(tmp_path)
    kept = cache_codec.decode(json.loads(json.dumps(cache_codec.encode(job, Job))), Job)
    assert "spec" not in kept.__dict__  # still the kept text
    assert inputs.states(kept, tmp_path) == inputs.states(job, tmp_path)
    assert "spec" not in kept.__dict__
    assert [r.field for r in kept.inputs] == ["model.uri", "model.tokenizer.uri",
                                              "data.train.uri"]


def test_identity_path_is_not_checked_and_says_so(tmp_path: Path) -> None:
    job = _spec(tmp_path, identity="path")
    found = {s.field: s for s in inputs.states(job, tmp_path)}
    assert found["data.train.uri"].sha256 is None
    assert found["data.train.uri"].unchecked == "identity: path in the spec"


@pytest.mark.parametrize("uri,revision,checked", [
    ("hf://org/model", None, False),
    ("hf://org/model", "main", False),
    ("hf://org/model", "0123456789abcdef0123456789abcdef01234567", True),
    ("pvc://claim/model", None, False),
    ("s3://bucket/model", None, False),
])
def test_what_cannot_be_read_here_says_why(tmp_path: Path, uri: str, revision: str | None,
                                           checked: bool) -> None:
    state = inputs._state("model.uri", uri, "content", revision, tmp_path, None)
    assert state.sha256 is None
    assert (state.unchecked is None) is checked
    if uri.startswith("hf://"):
        assert state.revision == revision
        if not checked:
            assert "pin model.revision to a 40-hex commit" in (state.unchecked or "")


def _state(digest: str, rows: int | None = None) -> InputState:
    return InputState("data.train.uri", "file://train.jsonl", sha256=digest * 64, rows=rows)


def test_changed_needs_a_digest_on_both_sides() -> None:
    old = {"data.train.uri": _state("a", 64)}
    assert changed(old, [_state("a", 64)]) == ()
    (change,) = changed(old, [_state("b", 65)])
    assert change.line() == ("dataset data.train.uri (file://train.jsonl) content changed: "
                             "sha256:aaaaaaaaaaaa (64 rows) -> sha256:bbbbbbbbbbbb (65 rows)")
    assert changed(None, [_state("b")]) == ()  # applied by an ftspec that recorded none
    unchecked = InputState("data.train.uri", "file://train.jsonl", unchecked="identity: path")
    assert changed(old, [unchecked]) == ()


def test_the_applied_record_keeps_inputs_and_drops_bad_shapes() -> None:
    record = AppliedRecord("1", "w", {}, {}, {"data.train.uri": _state("c", 7)})
    back = decode(encode(record))
    assert back is not None and back.inputs == record.inputs
    data = json.loads(encode(record))
    data["inputs"] = {"data.train.uri": {"uri": "file://x", "sha256": "not-hex", "rows": -1},
                      "model.uri": ["not", "a", "dict"], "k": {"sha256": "a" * 64}}
    bad = decode(json.dumps(data))
    assert bad is not None
    assert bad.inputs == {"data.train.uri": InputState("data.train.uri", "file://x")}


def _with_inputs(obj: dict[str, Any], state: InputState) -> dict[str, Any]:
    record = AppliedRecord("1", "w", {}, {}, {state.field: state})
    obj["metadata"].setdefault("annotations", {})["ftspec.dev/applied"] = encode(record)
    return obj


def _kube(inp: ObjectInput) -> Any:
    """The Kubernetes planner's change as the engine settles it (the planner decides on
    what would run; the engine compares the inputs)."""
    return engine.settled(planned(decide(inp), inp))


def test_kubernetes_plan_replaces_a_job_whose_inputs_changed() -> None:
    live = live_of(_with_inputs(trainjob(), _state("a")))
    same = _with_inputs(trainjob(), _state("a"))
    other = _with_inputs(trainjob(), _state("b"))
    assert _kube(ObjectInput("kubeflow", "a", "a.yaml", same, live, same)).action is Action.NOOP
    change = _kube(ObjectInput("kubeflow", "a", "a.yaml", other, live, other))
    assert change.action is Action.REPLACE
    assert change.reason and "data.train.uri" in change.reason
    assert [f.path for f in change.fields] == ["inputs.data.train.uri"]
    assert any("content changed" in line for line in change.ml_changes)


def test_ray_plan_replaces_a_job_whose_inputs_changed(tmp_path: Path) -> None:
    """A Ray job that ran what the spec submits now, on other bytes: a new job."""
    from dataclasses import replace

    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
    from ftspec.reconciler.backend import Desired
    from ftspec.reconciler.ray.backend import RayBackend, submission

    _spec(tmp_path)
    sets = ("deploy.target=ray", "deploy.ray.address=http://127.0.0.1:9",
            f"model.uri=file://{tmp_path}/model",
            f"model.tokenizer.uri=file://{tmp_path}/model/tokenizer.model",
            f"data.train.uri=file://{tmp_path}/dataset.jsonl",
            f"output.uri=file://{tmp_path}/out")
    compiled = compile_spec(SpecInput(tmp_path / "spec.yaml", (), sets), "artifacts",
                            CompileOptions(schema="on-error"))
    assert compiled.job is not None, [d.format() for d in compiled.diagnostics]
    now = inputs.states(compiled.job, tmp_path)
    before = tuple(replace(s, sha256="a" * 64) if s.field == "data.train.uri" else s
                   for s in now)
    desired = Desired(compiled.job, compiled.artifacts, str(tmp_path / "spec.yaml"),
                      inputs=now)
    live = {**submission(replace(desired, inputs=before)), "status": "SUCCEEDED",
            "start_time": 1}
    backend = RayBackend()
    kept = engine.settled(backend._decide(replace(desired, inputs=before), [live]))
    assert kept.action is Action.NOOP
    change = engine.settled(backend._decide(desired, [live]))  # the engine compares inputs
    assert change.action is Action.REPLACE, change.reason
    assert "data.train.uri" in (change.reason or "")
    assert [f.path for f in change.fields] == ["submission_id", "inputs.data.train.uri"]
    assert change.upgrade is None  # the spec and ftspec are as they were: the data is not


class _Backend:
    """A backend whose plan is given (the engine's part only)."""

    name = "fake"

    def __init__(self, *changes: Any) -> None:
        self.changes = changes

    def plan(self, desired: Any) -> Any:
        from ftspec.reconciler.model import Plan

        return Plan("fake", tuple(self.changes))


def test_replace_requested_turns_a_noop_into_a_replace_and_names_unknown_addresses() -> None:
    from ftspec.reconciler import engine
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.model import Change

    kept = Change("local.run.a", Action.NOOP, {"x": 1}, {"x": 1}, reason="already succeeded")
    other = Change("local.run.b", Action.NOOP, {"x": 2}, {"x": 2})
    plan = engine.plan(_Backend(kept, other), [], ("local.run.a",))  # type: ignore[arg-type]
    assert [c.action for c in plan.changes] == [Action.REPLACE, Action.NOOP]
    assert plan.changes[0].reason == engine.REPLACE_REASON
    with pytest.raises(BackendError, match="--replace local.run.c: these specs plan no run"):
        engine.plan(_Backend(kept), [], ("local.run.c",))  # type: ignore[arg-type]


def test_a_saved_plan_keeps_its_replace_addresses(tmp_path: Path) -> None:
    from ftspec.reconciler.model import Change, Plan
    from ftspec.reconciler.saved import load_plan, save_plan

    plan = Plan("local", (Change("local.run.a", Action.REPLACE, None, {"x": 1}),),
                inputs={"specs": ["/s.yaml"], "overlays": [], "sets": [], "namespace": None,
                        "replace": ["local.run.a"]})
    save_plan(plan, tmp_path / "p.plan")
    assert load_plan(tmp_path / "p.plan").inputs["replace"] == ["local.run.a"]


def test_launcher_files_compare_key_by_key_and_logging_keys_only_change_how_a_run_logs(
        ) -> None:
    from ftspec.reconciler.local.compare import file_changes, observational

    old = "# Generated by ftspec\nlog_every_n_steps: 1\noptimizer:\n  lr: 0.01\n"
    logging = file_changes("config.yaml", old, old.replace("n_steps: 1", "n_steps: 5"))
    assert [(f.path, f.before, f.after) for f in logging] == [
        ('files["config.yaml"].log_every_n_steps', 1, 5)]
    assert all(observational(f) for f in logging)
    lr = file_changes("config.yaml", old, old.replace("0.01", "0.02"))
    assert [f.path for f in lr] == ['files["config.yaml"].optimizer.lr']
    assert not any(observational(f) for f in lr)
    sft = file_changes("sft.yaml", "report_to: none\n", "report_to: [tensorboard]\n")
    assert all(observational(f) for f in sft)
    broken = file_changes("config.yaml", "a: [", "a: 1\n")  # the old one does not parse
    assert [f.path for f in broken] == ['files["config.yaml"]'] and not observational(broken[0])


def test_inputs_not_checked_are_one_line_per_set_naming_the_jobs() -> None:
    from types import SimpleNamespace

    from ftspec.reconciler.engine import unchecked_warnings

    hub = InputState("model.uri", "hf://org/m", unchecked="no model.revision")
    point = [SimpleNamespace(job=SimpleNamespace(spec_id=f"sweep-lr-{i}"), inputs=(hub,))
             for i in (1, 2)]
    local = SimpleNamespace(job=SimpleNamespace(spec_id="local"), inputs=(_state("a"),))
    assert unchecked_warnings([*point, local]) == [  # type: ignore[list-item]
        ("sweep-lr-1, sweep-lr-2: content not checked for model.uri hf://org/m "
        "(no model.revision)")]
