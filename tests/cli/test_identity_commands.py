"""destroy, status and logs need only the job's identity: they run where no launcher package
(torchtune, accelerate) can be imported, and compile nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.ray.backend import SPEC_FILE_KEY
from ftspec.reconciler.ray.jobsapi import TERMINAL, JobsApi
from ftspec.spec.ownership import OWNER_LABEL, OWNER_VALUE, SPEC_ID_LABEL
from helpers.kubecli import prepare_namespace, run_cli, spec_copy

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("torchtune", "recipes", "accelerate", "torch", "transformers", "trl", "peft")
PROBE = """
import contextlib, io, json, sys
BLOCKED = set(json.loads(sys.argv[1]))

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Block())
from ftspec.cli.main import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[2:])
print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()}))
"""


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(BLOCKED), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


@pytest.mark.slow
def test_identity_commands_work_without_launcher_packages(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "tiny-local.yaml", tmp_path / "examples")
    spec = "examples/tiny-local.yaml"
    status = _run(tmp_path, "status", spec, "--json")
    assert status["code"] == 0, status
    [row] = json.loads(str(status["out"]))
    assert (row["address"], row["phase"]) == ("local.run.tiny-local", "Unknown")
    destroy = _run(tmp_path, "destroy", spec, "--auto-approve")
    assert destroy["code"] == 0, destroy
    # a destroy of what was never applied says nothing is there (before: "Your live objects
    # match the spec", the wording of a plan)
    assert "No changes. No objects need to be destroyed." in str(destroy["out"]), destroy
    assert "match the spec" not in str(destroy["out"]), destroy
    logs = _run(tmp_path, "logs", spec)
    assert logs["code"] == 1
    assert "no local run recorded" in str(logs["err"]), logs


@pytest.mark.slow
def test_the_block_is_real(tmp_path: Path) -> None:
    """The same probe makes a command that needs the launcher fail: the block can bite."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "tiny-local.yaml", tmp_path / "examples")
    compiled = _run(tmp_path, "compile", "examples/tiny-local.yaml")
    assert compiled["code"] != 0
    err = str(compiled["err"])
    assert any(word in err for word in ("ModuleNotFoundError", "blocked", "not installed")), err


@pytest.mark.slow
def test_validate_runs_the_launcher_checks_without_the_launcher_package() -> None:
    """validate's answer does not depend on this machine: torchtune's checks read the
    committed snapshot of its configs, never the package (blocked here)."""
    spec = str(ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml")
    ok = _run(ROOT, "validate", spec)
    assert ok["code"] == 0, ok
    bad = _run(ROOT, "validate", spec, "--set", "model.dtype=fp16")
    assert bad["code"] == 1
    assert "--set[0]:1:13: error: model.dtype: torchtune's recipes do not train in fp16" \
        in str(bad["out"]), bad


@pytest.mark.kube
def test_kubeflow_identity_commands_without_launcher_packages(
        kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TrainJob applied here (torchtune installed) is found, its logs asked for and
    destroyed by a process that cannot import torchtune: the spec's identity suffices."""
    env = {"KUBECONFIG": str(kube_cluster.kubeconfig_path), "FTSPEC_KUBE_CONTEXT": "admin",
           "FTSPEC_KUBE_RETRIES": "0"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    prepare_namespace(kube_cluster, kube_namespace)
    spec, ns = spec_copy(tmp_path), kube_namespace
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    trainjob = kube_cluster.resource_path("trainer.kubeflow.org/v1alpha1", "TrainJob",
                                          namespace=ns, name="llama32-1b-alpaca-lora")
    assert kube_cluster.api().exists(trainjob)

    status = _run(tmp_path, "status", str(spec), "-n", ns, "--json", env=env)
    assert status["code"] == 0, status
    [row] = json.loads(str(status["out"]))
    assert row["address"] == f"kubeflow.TrainJob.{ns}/llama32-1b-alpaca-lora", row
    assert row["phase"] != "Unknown" and "not found" not in str(row["message"]), row
    logs = _run(tmp_path, "logs", str(spec), "-n", ns, env=env)
    assert logs["code"] == 1  # no kubelet here: the TrainJob has no pods
    assert "has no pods yet" in str(logs["err"]), logs
    destroy = _run(tmp_path, "destroy", str(spec), "-n", ns, "--auto-approve", env=env)
    assert destroy["code"] == 0, destroy
    assert "1 destroyed" in str(destroy["out"]), destroy
    assert not kube_cluster.api().exists(trainjob)


@pytest.mark.ray
def test_ray_identity_commands_without_launcher_packages(ray_head: Any, tmp_path: Path
                                                         ) -> None:
    """A job owned by the spec on a real Ray head: status, logs and destroy from a process
    that cannot import torchtune or accelerate (the job itself only echoes: what is tested
    is the commands' reach, not training)."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "tiny-local.yaml", tmp_path / "examples")
    spec = "examples/tiny-local.yaml"
    sets = ["deploy.target=ray", f"deploy.ray.address={ray_head.address}",
            f"model.uri=file://{tmp_path}/model",
            f"model.tokenizer.uri=file://{tmp_path}/model/tokenizer.model",
            f"data.train.uri=file://{tmp_path}/dataset.jsonl",
            f"output.uri=file://{tmp_path}/out"]
    flags = [x for value in sets for x in ("--set", value)]
    api = JobsApi(ray_head.address, timeout_s=120)  # submitting starts a supervisor actor
    payload = {"entrypoint": "echo identity-only-job",
               "submission_id": f"tiny-local-identity-{os.getpid()}",
               "metadata": {OWNER_LABEL: OWNER_VALUE, SPEC_ID_LABEL: "tiny-local",
                            SPEC_FILE_KEY: spec}}
    deadline = time.monotonic() + 120
    while True:  # a fresh head answers "no available agent" until its agent is up
        try:
            sid = api.submit(payload)
            break
        except BackendError as exc:
            assert exc.retryable and time.monotonic() < deadline, exc
            time.sleep(1.0)
    while (api.get_job(sid) or {}).get("status") not in TERMINAL:
        assert time.monotonic() < deadline, api.get_job(sid)
        time.sleep(0.5)

    status = _run(tmp_path, "status", spec, "--json", *flags)
    assert status["code"] == 0, status
    [row] = json.loads(str(status["out"]))
    assert (row["address"], row["phase"]) == ("ray.job.tiny-local", "Succeeded"), row
    logs = _run(tmp_path, "logs", spec, *flags)
    assert logs["code"] == 0, logs
    assert "identity-only-job" in str(logs["out"]), logs
    destroy = _run(tmp_path, "destroy", spec, "--auto-approve", *flags)
    assert destroy["code"] == 0, destroy
    assert api.get_job(sid) is None
