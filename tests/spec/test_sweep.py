"""Sweeps without running anything: the grid's points, their names and identities, the
checks of the grid (located at the grid key or value), and each point as a spec of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.compiler.sweep import expand
from ftspec.spec.sweep import Point, points, with_point
from helpers.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tiny-sweep.yaml"
GRID_LINE = "    training.learning_rate: [1.0e-2, 3.0e-3, 1.0e-3]\n"


def _spec(tmp_path: Path, grid: str, name: str = "sweep.yaml") -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert GRID_LINE in text
    path = tmp_path / name
    path.write_text(text.replace(GRID_LINE, grid), encoding="utf-8")
    return path


def _line_col(path: Path, needle: str) -> tuple[int, int]:
    """Where ``needle`` first is in the sweep block (the file's last lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("sweep:")
    for n, line in enumerate(lines[start:], start + 1):
        if needle in line:
            return n, line.index(needle) + 1
    raise AssertionError(needle)


def test_points_are_every_combination_in_grid_order() -> None:
    got = points({"training.learning_rate": [1e-4, 3e-4], "method.lora.rank": [8, 16]})
    assert [p.as_dict() for p in got] == [
        {"training.learning_rate": 1e-4, "method.lora.rank": 8},
        {"training.learning_rate": 1e-4, "method.lora.rank": 16},
        {"training.learning_rate": 3e-4, "method.lora.rank": 8},
        {"training.learning_rate": 3e-4, "method.lora.rank": 16}]
    assert [p.label for p in got] == ["lr-1e-4-rank-8", "lr-1e-4-rank-16", "lr-3e-4-rank-8",
                                      "lr-3e-4-rank-16"]
    assert got[3].index == (1, 1)


def test_labels_are_readable_and_tell_same_named_fields_apart() -> None:
    (p,) = points({"training.micro_batch_size": [2], "data.train.format": ["alpaca"],
                   "method.lora.dropout": [0.05], "training.gradient_checkpointing": [True],
                   "training.optimizer.weight_decay": [-0.5]})
    assert p.label == "mbs-2-format-alpaca-dropout-5e-2-gradient-checkpointing-true-wd-m0p5"
    (q,) = points({"data.train.uri": ["file://a"], "data.validation.uri": ["file://b"]})
    assert q.label == "train-uri-file-a-validation-uri-file-b"


def test_a_long_name_is_hashed_within_the_limit_and_stays_unique() -> None:
    long = points({"method.lora.target_modules": [["q_proj", "k_proj", "v_proj", "o_proj"],
                                                  ["q_proj", "v_proj", "o_proj", "k_proj"]]})
    names = [with_point("a-rather-long-sweep-name", p, 47) for p in long]
    assert all(len(n) <= 47 for n in names) and len(set(names)) == 2
    assert all(n.startswith("a-rather-long-sweep-name-") for n in names)
    short = with_point("s", Point((("training.learning_rate", 0.01),), (0,)))
    assert short == "s-lr-1e-2" and with_point("s", None) == "s"


def test_each_point_is_a_job_with_its_own_identity_name_and_output(tmp_path: Path) -> None:
    path = _spec(tmp_path, "    training.learning_rate: [1.0e-2, 3.0e-3]\n"
                           "    method.lora.rank: [4, 8]\n")
    base = compile_spec(SpecInput(path), "identity")
    assert base.ok and base.job is not None and base.job.spec_id == "tiny-sweep"
    jobs = [c.job for c in expand(base, "identity") if c.ok and c.job is not None]
    assert [j.spec_id for j in jobs] == [
        "tiny-sweep-lr-1e-2-rank-4", "tiny-sweep-lr-1e-2-rank-8",
        "tiny-sweep-lr-3e-3-rank-4", "tiny-sweep-lr-3e-3-rank-8"]
    assert [j.name for j in jobs] == [j.spec_id for j in jobs]  # metadata.name + the point
    last = jobs[-1]
    assert last.point == {"training.learning_rate": 3.0e-3, "method.lora.rank": 8}
    assert last.spec.training.learning_rate == 3.0e-3 and last.spec.method.lora.rank == 8
    assert last.spec.sweep is None  # a point is an ordinary spec
    assert last.spec.output is not None
    assert last.spec.output.uri == "file://.ftspec/runs/tiny-sweep/output/lr-3e-3-rank-8"
    assert last.labels["ftspec.dev/spec-id"] == "tiny-sweep-lr-3e-3-rank-8"


def test_adding_a_value_keeps_every_other_point_as_it_was(tmp_path: Path) -> None:
    """The points of the grid before are compiled to the same artifacts after a value is
    added: the live commands see them unchanged (the e2e test plans it for real)."""
    def compiled(grid: str) -> dict[str, dict[str, str]]:
        base = compile_spec(SpecInput(_spec(tmp_path, grid)), "artifacts")
        return {c.job.spec_id: {a.path: a.content for a in c.artifacts}
                for c in expand(base, "artifacts") if c.job is not None}

    before = compiled("    training.learning_rate: [1.0e-2, 3.0e-3]\n")
    after = compiled("    training.learning_rate: [1.0e-2, 3.0e-2, 3.0e-3]\n")
    assert set(after) - set(before) == {"tiny-sweep-lr-3e-2"}
    assert all(after[k] == v for k, v in before.items())


@pytest.fixture
def _plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.usefixtures("_plain")
def test_validate_checks_each_point_and_names_it_at_the_grid_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _spec(tmp_path, "    training.learning_rate: [1.0e-2, -3.0]\n"
                           "    method.lora.rank: [4, \"x\"]\n", "bad.yaml")
    code, out, _ = run(capsys, "validate", "bad.yaml")
    assert code == 1
    line, col = _line_col(path, "-3.0")
    assert (f"bad.yaml:{line}:{col}: error: training.learning_rate: sweep point lr-m3-rank-4 "
            "(training.learning_rate=-3.0, method.lora.rank=4): must be > 0") in out, out
    line, col = _line_col(path, '"x"')
    assert (f"bad.yaml:{line}:{col}: error: method.lora.rank: sweep point lr-1e-2-rank-x "
            '(training.learning_rate=0.01, method.lora.rank="x"): expected an integer') in out
    assert "sweep point lr-1e-2-rank-4" not in out  # a point that can run says nothing


@pytest.mark.usefixtures("_plain")
@pytest.mark.parametrize("grid,needle,message", [
    ("    training.learnin_rate: [0.1]\n", "training.learnin_rate",
     'unknown field "learnin_rate" in training\n  hint: did you mean "learning_rate"?'),
    ("    training.learning_rate.x: [0.1]\n", "training.learning_rate.x",
     'training.learning_rate is a value; it has no field "x"'),
    ("    metadata.name: [a, b]\n", "metadata.name",
     "metadata.name cannot be swept: it is the run's identity"),
    ("    deploy.target: [local, ray]\n", "deploy.target",
     "deploy.target cannot be swept"),
])
def test_a_bad_grid_path_is_an_error_at_its_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], grid: str, needle: str,
        message: str) -> None:
    path = _spec(tmp_path, grid, "bad.yaml")
    code, out, _ = run(capsys, "validate", "bad.yaml")
    line, col = _line_col(path, needle)
    assert code == 1 and f"bad.yaml:{line}:{col}: error: " in out and message in out, out


@pytest.mark.usefixtures("_plain")
def test_duplicates_and_oversized_grids_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _spec(tmp_path, "    training.learning_rate: [1.0e-2, 1.0e-2]\n", "dup.yaml")
    code, out, _ = run(capsys, "validate", "dup.yaml", "--json")
    (diag,) = json.loads(out)["files"][0]["diagnostics"]
    line, col = _line_col(path, "1.0e-2]")
    assert code == 1 and diag["code"] == "rule.sweep-duplicate"
    assert (diag["line"], diag["col"]) == (line, col), diag
    many = "".join(f"    training.{k}: [{', '.join(str(v) for v in vals)}]\n" for k, vals in (
        ("learning_rate", [0.1, 0.2, 0.3, 0.4, 0.5]), ("seed", [1, 2, 3, 4, 5]),
        ("max_grad_norm", [1.0, 2.0, 3.0])))
    _spec(tmp_path, many, "big.yaml")
    code, out, _ = run(capsys, "validate", "big.yaml")
    assert code == 1 and "the grid has 75 points; a sweep runs at most 64" in out, out


@pytest.mark.usefixtures("_plain")
def test_compile_writes_each_point_under_its_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _spec(tmp_path, "    method.lora.rank: [4, 8]\n")
    code, out, _ = run(capsys, "compile", "sweep.yaml", "--out", "out")
    assert code == 0, out
    for rank in (4, 8):
        config = (tmp_path / f"out/tiny-sweep-rank-{rank}/config.yaml").read_text()
        assert f"lora_rank: {rank}\n" in config
        assert f"output_dir: .ftspec/runs/tiny-sweep/output/rank-{rank}\n" in config


@pytest.mark.usefixtures("_plain")
def test_logs_of_a_sweep_name_the_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    _spec(tmp_path, "    method.lora.rank: [4, 8]\n")
    code, _, err = run(capsys, "logs", "sweep.yaml")
    assert code == 1 and "sweep.yaml is a sweep of 2 points: name one with --point" in err
    assert "points: tiny-sweep-rank-4, tiny-sweep-rank-8" in err
    code, _, err = run(capsys, "logs", "sweep.yaml", "--point", "rank-8")
    assert code == 1 and "no local run recorded for sweep.yaml" in err, err
    code, _, err = run(capsys, "logs", "sweep.yaml", "--point", "rank-16")
    assert code == 1 and "sweep.yaml has no point named 'rank-16'" in err, err


@pytest.mark.usefixtures("_plain")
def test_output_of_a_sweep_names_the_point(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``output SWEEP NAME`` asks which point (best or one by name); ``--point`` picks it
    before anything is read (no run exists here)."""
    _spec(tmp_path, "    method.lora.rank: [4, 8]\n")
    code, _, err = run(capsys, "output", "sweep.yaml", "adapter")
    assert code == 1 and "sweep.yaml is a sweep of 2 points: NAME reads one run's output" in err
    assert "hint: name the point: `ftspec output sweep.yaml adapter --point best`" in err, err
    code, _, err = run(capsys, "output", "sweep.yaml", "adapter", "--point", "rank-16")
    assert code == 1 and "sweep.yaml has no point named 'rank-16'" in err, err
    code, _, err = run(capsys, "output", "sweep.yaml", "adapter", "--point", "rank-8")
    assert code == 1 and "no run to read outputs from" in err, err
    code, _, err = run(capsys, "output", "sweep.yaml", "--point", "best")
    assert code == 1 and "no point has succeeded with a valid final loss yet" in err, err
    code, _, err = run(capsys, "output", "sweep.yaml", "--point", "best", "--compare")
    assert code == 1 and "--point reads one point; --compare shows every point" in err, err


@pytest.mark.parametrize("example,kind,limit", [
    ("kubeflow-llama32-1b-lora-alpaca.yaml", "TrainJob", 63),
    ("sfttrainer-ray-2x8-roce.yaml", "RayJob", 47),
])
def test_on_kubernetes_each_point_is_an_object_of_its_own(
        tmp_path: Path, example: str, kind: str, limit: int) -> None:
    """Separate TrainJobs / RayJobs: each point's name (within the platform's limit) and
    ownership label differ; a name too long for a RayJob is hashed, not refused."""
    path = tmp_path / example
    path.write_text((ROOT / "examples" / example).read_text(encoding="utf-8") + (
        "sweep:\n  grid:\n    training.learning_rate: [1.0e-4, 2.0e-4]\n"
        "    training.seed: [1, 2]\n"), encoding="utf-8")
    base = compile_spec(SpecInput(path), "artifacts")
    assert base.ok, [d.format() for d in base.diagnostics]
    names, owners = set(), set()
    for point in expand(base, "artifacts"):
        assert point.ok, [d.format() for d in point.diagnostics]
        (obj,) = [a.obj for a in point.artifacts if a.obj and a.obj.get("kind") == kind]
        names.add(obj["metadata"]["name"])
        owners.add(obj["metadata"]["labels"]["ftspec.dev/spec-id"])
        assert obj["metadata"]["labels"]["ftspec.dev/sweep"] == base.job.spec_id
        assert len(obj["metadata"]["name"]) <= limit
    assert len(names) == len(owners) == 4


def _owned(ns: str, spec_id: str, sweep: str | None = None) -> dict[str, object]:
    labels = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": spec_id}
    if sweep is not None:
        labels["ftspec.dev/sweep"] = sweep
    return {"kind": "TrainJob", "metadata": {"name": spec_id, "namespace": ns,
                                             "labels": labels}}


def test_kubernetes_finds_the_points_that_left_the_grid_and_nothing_else(
        tmp_path: Path) -> None:
    """``spec_strays`` (what plan deletes and destroy removes beside the desired jobs): a
    point no longer in the grid, the spec's job from before it had a sweep, the points of a
    spec whose sweep was removed; never another spec's objects."""
    from ftspec.reconciler.backend import Desired
    from ftspec.reconciler.kubernetes.planner import spec_strays

    def desired(grid: str | None) -> list[Desired]:
        path = _spec(tmp_path, grid or "")
        if grid is None:  # no sweep: the spec as written, without its sweep block
            text = path.read_text(encoding="utf-8")
            path.write_text(text[: text.index("sweep:")], encoding="utf-8")
        base = compile_spec(SpecInput(path), "identity")
        return [Desired(job=c.job, artifacts=(), spec_file=str(path))
                for c in expand(base, "identity") if c.job is not None]

    ns = desired(None)[0].job.namespace
    live = {"{namespace}/{name}".format(**o["metadata"]): [o] for o in (  # type: ignore[arg-type]
        _owned(ns, "tiny-sweep-lr-1e-2", "tiny-sweep"),
        _owned(ns, "tiny-sweep-lr-3e-3", "tiny-sweep"),
        _owned(ns, "tiny-sweep"), _owned(ns, "other"), _owned(ns, "other-lr-1e-2", "other"),
        _owned("elsewhere", "tiny-sweep-lr-1e-3", "tiny-sweep"))}

    def found(grid: str | None) -> list[str]:
        return sorted(o["metadata"]["name"] for _, o in spec_strays(desired(grid), live))

    assert found("    training.learning_rate: [1.0e-2]\n") == ["tiny-sweep", "tiny-sweep-lr-3e-3"]
    assert found("    training.learning_rate: [1.0e-2, 3.0e-3]\n") == ["tiny-sweep"]
    assert found(None) == ["tiny-sweep-lr-1e-2", "tiny-sweep-lr-3e-3"]
