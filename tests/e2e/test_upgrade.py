"""Upgrading ftspec changes no live run: the previous release (``helpers.previous``, in a
virtualenv of its own at another path) applies, this code plans "No changes" — on the local
backend (a real run), on a real Ray head and on the real API server. And where a new ftspec
does change what would run, the plan says the change comes from the upgrade and what to pin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import prepare_namespace, spec_copy, use_cluster
from helpers.previous import PreviousUnavailable, previous_ftspec
from helpers.tinyspec import SPEC, ray_sets

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
NO_CHANGES = "No changes. Your live objects match the spec."


@pytest.fixture(scope="session")
def previous() -> str:
    try:
        return str(previous_ftspec())
    except PreviousUnavailable as exc:
        pytest.fail(f"the previous release of ftspec could not be installed: {exc}",
                    pytrace=False)


def run(command: str, workdir: Path, env: dict[str, str] | None, *args: str,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([command, *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_local_run_of_the_previous_release_plans_no_changes(
        workdir: Path, e2e_env: dict[str, str], previous: str) -> None:
    old = run(previous, workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert old.returncode == 0, old.stdout + old.stderr
    record = json.loads((workdir / ".ftspec/local/tiny-local.json").read_text())
    assert "applied" not in record  # written by the previous release
    assert "(hash " in (workdir / ".ftspec/runs/tiny-local/launch/config.yaml").read_text()
    plan = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert NO_CHANGES in plan.stdout
    # what the user changes still shows, in the spec's terms
    changed = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--set",
                  "training.learning_rate=0.002", "--detailed-exitcode")
    assert changed.returncode == 2, changed.stdout + changed.stderr
    assert "must be replaced" in changed.stdout and "# ML: learning rate" in changed.stdout
    # the previous release kept no record of the spec as written: the plan cannot tell the
    # user's change from an upgrade's, and says so
    assert "applied by an older ftspec, which kept no record" in " ".join(
        changed.stdout.split())


def test_a_default_changed_by_an_upgrade_is_named_with_the_value_to_pin(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    """A previous ftspec whose default ``training.optimizer.weight_decay`` was 0.01, as a
    fixture: the run it would have started (compiled with 0.01) and its applied record
    (that default, its version), then this ftspec, whose default is 0.0, plans."""
    from ftspec.reconciler.applied import decode, encode
    from helpers.tinyspec import tiny_job

    old = run(FTSPEC, workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--set",
              "training.optimizer.weight_decay=0.01")
    assert old.returncode == 0, old.stdout + old.stderr
    path = workdir / ".ftspec/local/tiny-local.json"
    record = json.loads(path.read_text())
    applied = decode(record["applied"])
    assert applied is not None
    now = tiny_job(workdir)
    assert now.defaults["training.optimizer.weight_decay"] == 0.0
    record["applied"] = encode(type(applied)(
        "0.0.9", now.written, {**now.defaults, "training.optimizer.weight_decay": 0.01},
        applied.summary))
    path.write_text(json.dumps(record))

    plan = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    text = " ".join(plan.stdout.split())
    assert "must be replaced" in text
    # the launcher file compared key by key: the row names the key and both values
    assert 'files["config.yaml"].optimizer.weight_decay = 0.01 -> 0.0' in plan.stdout, \
        plan.stdout
    assert ("the change comes from the ftspec upgrade (ftspec 0.0.9 -> " in text), text
    assert "training.optimizer.weight_decay 0.01 -> 0.0" in text
    assert "pin it in the spec (training.optimizer.weight_decay: 0.01)" in text
    as_json = json.loads(run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--json").stdout)
    (change,) = as_json["changes"]
    assert "training.optimizer.weight_decay 0.01 -> 0.0" in change["upgrade"]
    run(FTSPEC, workdir, e2e_env, "destroy", str(SPEC), "--auto-approve")


@pytest.mark.ray
def test_ray_job_of_the_previous_release_plans_no_changes(
        workdir: Path, e2e_env: dict[str, str], previous: str, ray_head: Any) -> None:
    sets = ray_sets(workdir, ray_head.address)
    for _ in range(3):  # a just-started head may answer the previous release's client
        # after its 10 s timeout on a loaded machine; an interrupted apply converges when
        # run again
        old = run(previous, workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *sets)
        if "cannot reach the Ray Jobs API" not in old.stderr + old.stdout:
            break
    assert old.returncode == 0, old.stdout + old.stderr
    try:
        plan = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *sets)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert NO_CHANGES in plan.stdout
    finally:
        run(FTSPEC, workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *sets)



def test_kubernetes_objects_of_the_previous_release_plan_no_changes(
        kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, previous: str) -> None:
    use_cluster(monkeypatch, kube_cluster)
    prepare_namespace(kube_cluster, kube_namespace)
    env = dict(os.environ)
    trainjob = spec_copy(tmp_path)
    rayjob = tmp_path / "rayjob.yaml"
    rayjob.write_text(trainjob.read_text().replace("target: kubeflow", "target: kuberay")
                      .replace("name: llama32-1b-alpaca-lora", "name: llama32-lora-ray"))
    paths = {trainjob: "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{}/trainjobs/"
             "llama32-1b-alpaca-lora", rayjob: "/apis/ray.io/v1/namespaces/{}/rayjobs/"
             "llama32-lora-ray"}
    for spec in (trainjob, rayjob):
        old = run(previous, tmp_path, env, "apply", str(spec), "-n", kube_namespace,
                  "--auto-approve")
        assert old.returncode == 0, old.stdout + old.stderr
        assert "spec-hash" in run(previous, tmp_path, env, "plan", str(spec), "-n",
                                  kube_namespace, "--json").stdout
        plan = run(FTSPEC, tmp_path, env, "plan", str(spec), "-n", kube_namespace,
                   "--detailed-exitcode")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert NO_CHANGES in plan.stdout
        # the previous release knew the job by its file's name (job, rayjob); now by its
        # metadata.name: a move, and apply relabels the object without replacing it
        name = paths[spec].rsplit("/", 1)[1]
        assert (f"/{name} # id changed from '{spec.stem}' to '{name}' by the ftspec upgrade"
                in " ".join(plan.stdout.split())), plan.stdout
        path = paths[spec].format(kube_namespace)
        uid = kube_cluster.request("GET", path)["metadata"]["uid"]
        moved = run(FTSPEC, tmp_path, env, "apply", str(spec), "-n", kube_namespace,
                    "--auto-approve")
        assert moved.returncode == 0, moved.stdout + moved.stderr
        live = kube_cluster.request("GET", path)["metadata"]
        assert live["uid"] == uid and live["labels"]["ftspec.dev/spec-id"] == name
        quiet = run(FTSPEC, tmp_path, env, "plan", str(spec), "-n", kube_namespace,
                    "--detailed-exitcode")
        assert quiet.returncode == 0 and NO_CHANGES in quiet.stdout, quiet.stdout
        assert "Moved" not in quiet.stdout
