"""ray: a Ray Jobs API submission for an existing Ray cluster (``deploy.ray.address``).

The artifact ``submission.json`` is exactly the body of ``POST /api/jobs/``; the Ray
backend submits it unchanged (``submission(job)`` builds the same dict,
``submit_kwargs`` maps it onto ``JobSubmissionClient.submit_job``). Files, downloads and
the single-node limit: see ``ray_payload``.

Secrets: a spec secret given as ``env: VAR`` becomes ``runtime_env.env_vars`` entry
``HF_TOKEN: ${VAR}``, which Ray expands from the environment of the node that runs the job —
the value never appears in the artifact. Kubernetes Secret references cannot be read
through the Jobs API and are rejected. Multi-node runs: ``ray_nodes``.
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.spec.urls import scheme
from ftspec.targets.base import Artifact, Target
from ftspec.targets.embed import launcher_check
from ftspec.targets.kube import secret_env_name, wandb_needs_key
from ftspec.targets.ray_nodes import check as ray_nodes_check
from ftspec.targets.ray_nodes import custom_resources
from ftspec.targets.ray_payload import (
    launch_for,
    metadata,
    ray_job,
)
from ftspec.targets.render import to_json


def _secret_vars(job: Job) -> dict[str, str]:
    return {secret_env_name(key): f"${{{ref.env}}}"
            for key, ref in sorted(job.spec.secrets.items()) if ref.env}


def entrypoint_resources(job: Job) -> dict[str, float]:
    """Single node: the entrypoint asks for the node's Ray resources (``ray_nodes``); a
    multi-node run's driver asks for nothing, its node bundles do."""
    return custom_resources(job) if job.nodes == 1 else {}


def submission(job: Job) -> dict[str, Any]:
    """The Jobs API request body (POST /api/jobs/)."""
    ray = job.spec.deploy.ray
    env = {**dict(sorted(ray.env_vars.items())), **_secret_vars(job)}
    built = ray_job(job, launch_for(job), env, list(ray.pip), entrypoint_resources(job))
    body: dict[str, Any] = {
        "entrypoint": built["entrypoint"],
        "submission_id": built["submission_id"],
        "runtime_env": built["runtime_env"],
        # the spec's labels and annotations ride in the job's metadata (Ray's string
        # map); ftspec's ownership marks win over a same-named key
        "metadata": {**job.labels, **job.annotations, **metadata(job)},
    }
    if job.gpus_per_node and job.nodes == 1:
        body["entrypoint_num_gpus"] = job.gpus_per_node
    if ray.entrypoint_num_cpus is not None:
        body["entrypoint_num_cpus"] = ray.entrypoint_num_cpus
    if built["resources"]:
        body["entrypoint_resources"] = built["resources"]
    return body


def submit_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """``JobSubmissionClient.submit_job(**submit_kwargs(body))`` sends ``body`` as is."""
    keys = ("entrypoint", "submission_id", "runtime_env", "metadata", "entrypoint_num_cpus",
            "entrypoint_num_gpus", "entrypoint_resources")
    return {k: body[k] for k in keys if k in body}


def check(job: Job) -> list[Diagnostic]:
    found = ray_nodes_check(job, "ray") + wandb_needs_key(job, "ray")
    for key, ref in sorted(job.spec.secrets.items()):
        if ref.secretRef is not None:
            found.append(Diagnostic(
                Severity.ERROR, "the Ray Jobs API cannot read a Kubernetes Secret",
                path=("secrets", key, "secretRef"),
                hint=f"give the variable that holds it on the Ray nodes: "
                     f"secrets: {{{key}: {{env: VAR}}}}", code="ray.secret-env"))
    if job.nodes == 1 and job.spec.resources.cpu:
        found.append(Diagnostic(
            Severity.WARNING, "a one-node Ray job asks for deploy.ray.entrypoint_num_cpus; "
            "resources.cpu sizes each node's bundle of a multi-node run only",
            path=("resources", "cpu"), hint="set deploy.ray.entrypoint_num_cpus",
            code="ray.cpu-single-node"))
    for path, uri in (((("model", "uri"), job.spec.model.uri),)
                      + tuple(((("data", "train", "uri"), job.spec.data.train.uri),)
                              if job.spec.data.train else ())):
        if scheme(uri) == "s3":
            found.append(Diagnostic(
                Severity.ERROR, "nothing fetches s3:// onto the Ray node before the launcher "
                "runs", path=path, hint="use an hf:// id, or a path on the Ray nodes "
                "(file:///abs/path)", code="ray.uri-scheme"))
    return found


class RayTarget:
    name = "ray"

    def check(self, job: Job) -> list[Diagnostic]:
        return launcher_check(job) + check(job)

    def compile(self, job: Job) -> list[Artifact]:
        body = submission(job)
        return [Artifact("submission.json", "submission", to_json(body), body)]


TARGET: Target = RayTarget()
