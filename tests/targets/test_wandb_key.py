"""``report_to: [wandb]``: the W&B key reaches the trainer on every cluster target, or the spec
is refused at ``report_to`` (W&B cannot log in unattended)."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.targets import get_target, kuberay
from ftspec.targets import kubeflow as kf
from helpers.jobs import make_job

WANDB = {"wandb_api_key": {"secretRef": {"name": "wandb", "key": "api-key"}}}
LOGGING = {"logging": {"report_to": ["wandb"]}}
KEY_ENV = {"name": "WANDB_API_KEY",
           "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}


def _training(**extra: Any) -> dict[str, Any]:
    return {"epochs": 1, "global_batch_size": 8, "micro_batch_size": 2,
            "learning_rate": 2.0e-4, **LOGGING, **extra}


def test_torchtune_trainjob_gets_the_key() -> None:
    job = make_job(training=_training(), secrets={**WANDB, "hf_token": {"secretRef": {
        "name": "hf-token", "key": "token"}}})
    trainer = kf.trainjob(job, None, "v2.3")["spec"]["trainer"]
    # the W&B key only: torchtune reads the model the initializer fetched with the HF token
    assert trainer["env"] == [KEY_ENV]
    assert "metric_logger._component_=torchtune.training.metric_logging.WandBLogger" \
        in trainer["args"]


def test_no_wandb_no_env() -> None:
    job = make_job(secrets=WANDB)
    assert "env" not in kf.trainjob(job, None, "v2.3")["spec"]["trainer"]


def test_kuberay_pods_get_the_key() -> None:
    job = make_job(training=_training(), secrets=WANDB, deploy={"target": "kuberay"})
    spec = kuberay.rayjob(job)["spec"]["rayClusterSpec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert KEY_ENV in head["env"]


@pytest.mark.parametrize("target", ["kubeflow", "kuberay", "ray"])
def test_refused_at_report_to_without_a_key(target: str) -> None:
    deploy: dict[str, Any] = {"target": target}
    if target == "ray":
        deploy["ray"] = {"address": "http://127.0.0.1:8265"}
    job = make_job(training=_training(), secrets=None, deploy=deploy, allow_errors=True)
    found = [d for d in get_target(target).check(job) if d.code == f"{target}.wandb-key"]
    assert [d.path for d in found] == [("training", "logging", "report_to", 0)]
    assert found[0].is_error and "wandb_api_key" in (found[0].hint or "")


def test_ray_forwards_the_variable_it_names() -> None:
    from ftspec.targets import ray

    job = make_job(training=_training(), deploy={"target": "ray", "ray": {
        "address": "http://127.0.0.1:8265"}}, secrets={"hf_token": None, "wandb_api_key": {"env": "MY_WANDB"}})
    assert not [d for d in ray.check(job) if d.is_error]
    assert ray.submission(job)["runtime_env"]["env_vars"]["WANDB_API_KEY"] == "${MY_WANDB}"
