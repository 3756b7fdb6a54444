"""Identity is content, not path (issue 36, item 1): after a real tiny run, one label changed
inside the training file, or one byte flipped in the model's weights, under the same paths,
plans a replace naming the input and both digests; the same bytes written back plan "No
changes" again; a saved plan made before the change is refused; ``identity: path`` keeps
the path-only behaviour and the plan says the content was not checked; ``--replace`` runs
an unchanged spec again (issue 36, item 4). The local backend with the quickstart spec, a
real torchtune process. A change of only how the run logs keeps the finished run (item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.ftspec_proc import ftspec
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TINY = Path(".ftspec/tiny/llama2")


def plan(workdir: Path, env: dict[str, str], *extra: str) -> tuple[int, dict[str, object]]:
    done = ftspec(workdir, env, "plan", str(SPEC), "--json", "--detailed-exitcode", *extra)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


@private_pid_namespace
def test_changed_bytes_under_the_same_path_plan_a_retrain(
        workdir: Path, e2e_env: dict[str, str], tmp_path: Path) -> None:
    env = {**e2e_env, "FTSPEC_CACHE_DIR": str(tmp_path / "cache")}
    link = workdir / TINY  # the shared assets are a link: this test edits its own copy
    assets = link.resolve()
    link.unlink()
    shutil.copytree(assets, link)

    applied = ftspec(workdir, env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert plan(workdir, env)[0] == 0
    saved = ftspec(workdir, env, "plan", str(SPEC), "--out", "before.plan")
    assert saved.returncode == 0, saved.stderr

    data = workdir / TINY / "dataset.jsonl"
    original = data.read_bytes()
    rows = original.decode().splitlines()
    row = json.loads(rows[3])
    row["output"] += " changed"
    rows[3] = json.dumps(row)
    data.write_text("\n".join(rows) + "\n")

    code, changed = plan(workdir, env)
    assert code == 2
    (change,) = changed["changes"]  # type: ignore[misc]
    assert change["action"] == "replace", change
    assert "data.train.uri" in change["reason"], change
    (line,) = [m for m in change["ml_changes"] if "content changed" in m]
    assert line.startswith("dataset data.train.uri (file://.ftspec/tiny/llama2/dataset.jsonl)")
    assert line.count("(64 rows)") == 2, line
    human = ftspec(workdir, env, "plan", str(SPEC))
    assert "# ML: dataset data.train.uri" in human.stdout, human.stdout

    stale = ftspec(workdir, env, "apply", "--plan", "before.plan", "--auto-approve")
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "its specs plan replace; nothing was changed" in stale.stderr, stale.stderr

    data.write_bytes(original)  # the same bytes again: a new file time, the same content
    assert plan(workdir, env)[0] == 0

    weights = workdir / TINY / "model" / "model.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 0xFF
    weights.write_bytes(bytes(blob))
    code, changed = plan(workdir, env)
    assert code == 2
    (change,) = changed["changes"]  # type: ignore[misc]
    assert [f["path"] for f in change["fields"]] == ["inputs.model.uri"], change["fields"]
    assert any(m.startswith("model model.uri (file://.ftspec/tiny/llama2/model) content changed")
               for m in change["ml_changes"]), change["ml_changes"]

    # the user's choice: this input is known by its path only, and the plan says so
    code, quiet = plan(workdir, env, "--set", "model.identity=path")
    assert code == 0, quiet
    assert any("model.uri" in w and "identity: path in the spec" in w
               for w in quiet["warnings"]), quiet["warnings"]  # type: ignore[attr-defined]

    weights.write_bytes(bytes(blob[:-1]) + bytes([blob[-1] ^ 0xFF]))  # the weights as they were
    assert plan(workdir, env)[0] == 0
    code, again = plan(workdir, env, "--replace", "local.run.tiny-local")
    assert code == 2 and again["changes"][0]["action"] == "replace", again  # type: ignore[index]
    assert "replace requested" in again["changes"][0]["reason"]  # type: ignore[index]
    first = json.loads(ftspec(workdir, env, "status", str(SPEC), "--json").stdout)[0]
    rerun = ftspec(workdir, env, "apply", str(SPEC), "--replace", "local.run.tiny-local",
                   "--auto-approve", "--wait")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    second = json.loads(ftspec(workdir, env, "status", str(SPEC), "--json").stdout)[0]
    assert second["phase"] == "Succeeded", second
    assert second["platform"]["started_at"] > first["platform"]["started_at"]
    assert plan(workdir, env)[0] == 0
    # the replaced run was kept whole, its adapter with it (item 4)
    (kept,) = json.loads(ftspec(workdir, env, "output", str(SPEC), "--history", "--json").stdout)
    assert kept["generation"] == 1 and kept["phase"] == "Succeeded" and kept["steps"] == 16
    assert kept["started_at"] == first["platform"]["started_at"], kept
    assert (workdir / kept["path"] / "output/epoch_0/adapter_model.safetensors").is_file()
    assert (workdir / ".ftspec/runs/tiny-local/output/epoch_0/adapter_model.safetensors"
            ).is_file()  # the new run's own

    code, logging = plan(workdir, env, "--set", "training.logging.steps=2")
    assert code == 0, logging
    assert any("not run again: only how the run logs changed" in w and "log_every_n_steps" in w
               for w in logging["warnings"]), logging["warnings"]  # type: ignore[attr-defined]
    code, lr = plan(workdir, env, "--set", "training.learning_rate=0.02")
    assert code == 2
    assert [f["path"] for f in lr["changes"][0]["fields"]] == [  # type: ignore[index]
        'files["config.yaml"].optimizer.lr']

    gone = ftspec(workdir, env, "destroy", str(SPEC), "--auto-approve")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "kept in .ftspec/history/tiny-local/2" in gone.stderr, gone.stderr  # an event
    assert "kept as generation 2" in gone.stdout, gone.stdout  # the plan said so first
    both = json.loads(ftspec(workdir, env, "output", str(SPEC), "--history", "--json").stdout)
    assert [g["generation"] for g in both] == [1, 2], both
    assert "tiny-local  2" in ftspec(workdir, env, "output", str(SPEC), "--history").stdout
