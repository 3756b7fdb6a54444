"""kubeflow: a Kubeflow Trainer ``TrainJob`` (trainer.kubeflow.org/v1alpha1).

torchtune launcher → a TrainJob on a torchtune (Cluster)TrainingRuntime: ``command: [tune,
run]``, args as the Kubeflow SDK writes them (``kubeflow_torchtune``), model and dataset
initializers. accelerate launcher → the launcher's command on a named runtime, or on a
generated namespaced TrainingRuntime (``generate_runtime``), with its files in a ConfigMap
(``kubeflow_accelerate``).

Trainer API generations: v2.1 places labels in ``spec.labels`` and pod settings in
``spec.podTemplateOverrides``; v2.2+ uses ``spec.runtimePatches`` (this target's entry has
manager ``ftspec.dev/ftspec``) and knows ``activeDeadlineSeconds``. ``compile`` renders for
``Job.trainer_version``: the spec's pin (auto = newest), or the version a backend detected
on the live cluster and handed to the one compile path (``ftspec.compiler.pipeline``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings, Severity
from ftspec.spec.ir import Job
from ftspec.spec.jsondata import copy_json
from ftspec.spec.platforms import (
    NEWEST_TRAINER,
    PATCHES_TRAINER,
    TRAINER_API,
    TRAINER_GROUP,
    TRAINER_VERSIONS,
)
from ftspec.spec.urls import pvc_parts, scheme
from ftspec.targets import get_launcher
from ftspec.targets import kubeflow_accelerate as kfa
from ftspec.targets import kubeflow_torchtune as kft
from ftspec.targets.base import Artifact, Launch, Target
from ftspec.targets.embed import launcher_check
from ftspec.targets.kube import (
    fetched_in_container,
    labels,
    object_meta,
    plain_env,
    pod_placement,
    resources_per_node,
    secret_env,
    secrets_need_refs,
    wandb_env,
    wandb_needs_key,
)
from ftspec.targets.kube_names import name_diagnostic, name_limit
from ftspec.targets.merge_patch import check_patch, merge_patch
from ftspec.targets.render import to_yaml

API = TRAINER_API
API_GROUP = TRAINER_GROUP
NEWEST = NEWEST_TRAINER
PATCH_MANAGER = "ftspec.dev/ftspec"
"""runtimePatches entry owned by ftspec (managers must be domain-prefixed paths)."""
TORCHTUNE_JOBS = ("dataset-initializer", "model-initializer", "node")
OUTPUT_VOLUME = "ftspec-output"
OUTPUT_MOUNT = "/workspace/output"


def resolve_version(job: Job, version: str | None = None) -> str:
    """``version`` (``auto`` = newest), else the Job's (see ``Job.trainer_version``)."""
    chosen = version or job.trainer_version
    return NEWEST if chosen == "auto" else chosen


def uses_patches(version: str) -> bool:
    """v2.2 and newer: runtimePatches (and activeDeadlineSeconds)."""
    return TRAINER_VERSIONS.index(version) >= TRAINER_VERSIONS.index(PATCHES_TRAINER)


def _on_runtime(job: Job) -> bool:
    """The launcher runs as ``tune run`` on a torchtune runtime (else: its own command)."""
    return get_launcher(job.launcher).kubeflow_style == "torchtune-runtime"


def _generated(job: Job) -> bool:
    """ftspec generates the TrainingRuntime that runs the launcher's command."""
    return not _on_runtime(job) and job.spec.deploy.kubeflow.generate_runtime


def runtime_ref(job: Job) -> dict[str, str] | None:
    """name, kind and apiGroup, always all three (the SDK sent only the name: sdk#536)."""
    kf = job.spec.deploy.kubeflow
    if _generated(job):
        return {"name": kfa.runtime_name(job), "kind": "TrainingRuntime", "apiGroup": API_GROUP}
    if kf.runtime is not None:
        return {"name": kf.runtime.name, "kind": kf.runtime.kind, "apiGroup": API_GROUP}
    default = kft.DEFAULT_RUNTIMES.get(job.spec.model.family or "")
    if _on_runtime(job) and default:
        return {"name": default, "kind": "ClusterTrainingRuntime", "apiGroup": API_GROUP}
    return None


def _raw_trainer(job: Job) -> dict[str, Any]:
    """``spec.trainer`` of ``overrides.trainjob`` (empty when it has none)."""
    spec = job.spec.overrides.trainjob.get("spec")
    trainer = spec.get("trainer") if isinstance(spec, dict) else None
    return trainer if isinstance(trainer, dict) else {}


def own_command(job: Job) -> bool:
    """``overrides.trainjob`` sets ``spec.trainer.command`` (``null``: the runtime's own):
    the TrainJob runs its own program (a custom trainer, as ``ftspec import trainjob``
    keeps one), not the launcher."""
    return "command" in _raw_trainer(job)


def _launch(job: Job) -> Launch | None:
    """The launcher's run with its default paths (pvc:// claims are mounted at /mnt/<claim>,
    hf:// ids are downloaded in the container); None on a torchtune runtime, and when the
    TrainJob runs its own command (no launcher files, env or volumes then)."""
    if _on_runtime(job) or own_command(job):
        return None
    return get_launcher(job.launcher).launch(job)


_error = Findings("kubeflow").error


def check_for_version(job: Job, version: str | None = None) -> list[Diagnostic]:
    found = secrets_need_refs(job, "kubeflow") + wandb_needs_key(job, "kubeflow")
    found += check_patch(job.spec.overrides.trainjob, "trainjob", "TrainJob", "kubeflow")
    kf = job.spec.deploy.kubeflow
    ver = resolve_version(job, version)
    if kf.active_deadline_seconds is not None and not uses_patches(ver):
        found.append(_error(("deploy", "kubeflow", "active_deadline_seconds"),
                            f"activeDeadlineSeconds needs Kubeflow Trainer v2.2 or newer "
                            f"(rendering for {ver})", "deadline-version",
                            hint="set deploy.kubeflow.trainer_version: v2.2 or newer (or auto), "
                            "or remove active_deadline_seconds"))
    found += _failure_policy_rules(job)
    limit = name_limit(job.spec, "kubeflow")
    too_long = limit and name_diagnostic(job.name, limit, "kubeflow.name-length")
    if too_long:
        found.append(too_long)
    ref = runtime_ref(job)
    if own_command(job):
        found.append(Diagnostic(
            Severity.WARNING, "overrides.trainjob sets spec.trainer.command: the TrainJob runs "
            "its own program, not the launcher, so model, data, method and training describe "
            "the job without reaching it", path=("overrides", "trainjob", "spec", "trainer",
                                                 "command"), code="kubeflow.own-command"))
    if _on_runtime(job) and "args" in _raw_trainer(job):
        found.append(Diagnostic(
            Severity.WARNING, "overrides.trainjob sets spec.trainer.args: they replace the "
            "args ftspec writes from model, data, method and training, so a change to those "
            "sections does not reach the TrainJob while this list is here",
            path=("overrides", "trainjob", "spec", "trainer", "args"),
            code="kubeflow.raw-args"))
    if _on_runtime(job):
        if kf.generate_runtime:
            found.append(_error(("deploy", "kubeflow", "generate_runtime"),
                                "generate_runtime is for the accelerate launcher; torchtune "
                                "runs on a torchtune runtime", "generate-runtime",
                                hint="remove generate_runtime, or use launcher: accelerate"))
        if ref is None:
            found.append(_error(("deploy", "kubeflow", "runtime"),
                                "no upstream torchtune runtime for model.family "
                                f"{job.spec.model.family or '(custom)'}; name one",
                                "runtime-required",
                                hint="add deploy.kubeflow.runtime.name: a "
                                "ClusterTrainingRuntime that runs torchtune for this model "
                                "(Kubeflow Trainer ships "
                                + ", ".join(sorted(kft.DEFAULT_RUNTIMES.values()))
                                + "), or use launcher: accelerate with "
                                "deploy.kubeflow.generate_runtime: true"))
        else:
            found.extend(kft.runtime_rules(job, ref["name"]))
    else:
        if ref is None:
            found.append(_error(("deploy", "kubeflow"),
                                f"the {job.launcher} launcher on kubeflow needs a runtime "
                                "that runs accelerate; Kubeflow's shipped runtimes run "
                                "torchtune",
                                "runtime-required",
                                hint="add deploy.kubeflow.generate_runtime: true"
                                + ("" if job.spec.deploy.scheduling.image else
                                   f" and deploy.scheduling.image: an image with {_HF_STACK}")
                                + ", or name a runtime that runs accelerate "
                                "(deploy.kubeflow.runtime.name)"))
        if not own_command(job):
            found.extend(fetched_in_container(job, "kubeflow"))
        if kf.generate_runtime and not job.spec.deploy.scheduling.image:
            found.append(_error(("deploy", "scheduling", "image"),
                                f"the generated TrainingRuntime needs an image with {_HF_STACK}",
                                "image-required", hint=f"add deploy.scheduling.image: an "
                                f"image with {_HF_STACK}"))
    return found


_HF_STACK = ("accelerate, transformers, TRL, peft and ftspec's training entrypoint "
             "(ftspec.runtime) installed")
"""What an image must hold to run the accelerate launcher's job."""
RESTART_JOB_TRAINER = "v2.3"
"""The first Trainer release whose runtimes' JobSet knows the RestartJob actions."""
RESTART_JOB_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")


def _failure_policy_rules(job: Job) -> list[Diagnostic]:
    """A failure policy lives in the runtime's JobSet template: the TrainJob API has no field
    for it, so ftspec writes it only into the runtime it generates. RestartJob actions need
    Trainer v2.3 (a pinned older version refuses them; ``plan`` checks the generated runtime
    against the live TrainingRuntime CRD, whose action enum says what the cluster serves)."""
    kf = job.spec.deploy.kubeflow
    fp = kf.failure_policy
    if fp is None:
        return []
    at = ("deploy", "kubeflow", "failure_policy")
    if not _generated(job):
        return [_error(at, "a failure policy belongs to the runtime's JobSet template, which "
                       "the TrainJob cannot change; ftspec writes it only into the runtime it "
                       "generates", "failure-policy-runtime",
                       hint="set it in the runtime you reference, or use launcher: accelerate "
                       "with deploy.kubeflow.generate_runtime: true")]
    pin = job.trainer_pin
    if pin is None or TRAINER_VERSIONS.index(pin) >= TRAINER_VERSIONS.index(RESTART_JOB_TRAINER):
        return []
    return [_error(at + ("rules", i, "action"), f"{rule.action} needs Kubeflow Trainer "
                   f"{RESTART_JOB_TRAINER} or newer (the spec pins {pin})",
                   "failure-policy-version",
                   hint="pin deploy.kubeflow.trainer_version: v2.3 (or auto), or use "
                   "RestartJobSet")
            for i, rule in enumerate(fp.rules) if rule.action in RESTART_JOB_ACTIONS]


def _initializer(job: Job) -> dict[str, Any]:
    """Model and dataset initializers: storageUri plus the HF token by reference only —
    ``secretRef`` (envFrom) when the Secret's key is already ACCESS_TOKEN, else an
    ACCESS_TOKEN env var read from the Secret key."""
    token = job.spec.secrets.get("hf_token")
    auth: dict[str, Any] = {}
    if token is not None and token.secretRef is not None:
        if token.secretRef.key == "ACCESS_TOKEN":
            auth["secretRef"] = {"name": token.secretRef.name}
        else:
            auth["env"] = [{"name": "ACCESS_TOKEN", "valueFrom": {"secretKeyRef": {
                "name": token.secretRef.name, "key": token.secretRef.key}}}]
    out: dict[str, Any] = {}
    if job.spec.data.train is not None:
        out["dataset"] = {"storageUri": job.spec.data.train.uri, **copy_json(auth)}
    out["model"] = {"storageUri": job.spec.model.uri, **copy_json(auth)}
    return out


def _trainer(job: Job, launch: Launch | None) -> dict[str, Any]:
    trainer: dict[str, Any] = {}
    image = job.spec.deploy.scheduling.image
    generated = _generated(job)
    if image and not generated:
        trainer["image"] = image
    if _on_runtime(job):
        trainer["command"] = ["tune", "run"]
        trainer["args"] = kft.trainer_args(job)
    elif not generated and launch is not None:
        trainer["command"] = kfa.container_command(job, launch)
    # torchtune reads the model the initializer downloaded: it needs only the W&B key.
    env = secret_env(job) + plain_env(launch.env) if launch is not None else wandb_env(job)
    if env:
        trainer["env"] = sorted(env, key=lambda e: e["name"])
    trainer["numNodes"] = job.nodes
    trainer["numProcPerNode"] = job.procs_per_node
    res = resources_per_node(job)
    if res:
        trainer["resourcesPerNode"] = res
    return trainer


def _pod_patches(job: Job, launch: Launch | None) -> dict[str, dict[str, Any]]:
    """Per replicated job: the pod-spec fields ftspec sets (placement, volumes, mounts)."""
    generated = _generated(job)
    jobs = TORCHTUNE_JOBS if _on_runtime(job) else ("node",)
    out = {name: {} if generated else pod_placement(job, gpu=name == "node") for name in jobs}
    node = out["node"]
    output = job.spec.output
    if _on_runtime(job) and output is not None and scheme(output.uri) == "pvc":
        claim, sub = pvc_parts(output.uri)
        mount: dict[str, Any] = {"name": OUTPUT_VOLUME, "mountPath": OUTPUT_MOUNT}
        if sub:
            mount["subPath"] = sub
        node["volumes"] = [{"name": OUTPUT_VOLUME, "persistentVolumeClaim": {"claimName": claim}}]
        node["containers"] = [{"name": "node", "volumeMounts": [mount]}]
    if launch is not None and not generated:  # a launcher's own command
        volumes, mounts = kfa.pod_volumes(job, launch)
        if volumes:
            node["volumes"] = volumes
            node["containers"] = [{"name": "node", "volumeMounts": mounts}]
    return {name: patch for name, patch in out.items() if patch}


def _runtime_patches(job: Job, pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    template: dict[str, Any] = {"metadata": {"labels": labels(job)}}
    if pods:
        template["spec"] = {"replicatedJobs": [
            {"name": name, "template": {"spec": {"template": {"spec": pod}}}}
            for name, pod in pods.items()
        ]}
    return [{"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": template}}]


def _pod_template_overrides(pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"targetJobs": [{"name": name}], "spec": pod} for name, pod in pods.items()]


def trainjob(job: Job, launch: Launch | None, version: str) -> dict[str, Any]:
    kf = job.spec.deploy.kubeflow
    spec: dict[str, Any] = {"runtimeRef": runtime_ref(job)}
    if _on_runtime(job):
        spec["initializer"] = _initializer(job)
    spec["trainer"] = _trainer(job, launch)
    pods = _pod_patches(job, launch)
    if uses_patches(version):
        spec["runtimePatches"] = _runtime_patches(job, pods)
        if kf.active_deadline_seconds is not None:
            spec["activeDeadlineSeconds"] = kf.active_deadline_seconds
    else:
        spec["labels"] = labels(job)
        if pods:
            spec["podTemplateOverrides"] = _pod_template_overrides(pods)
    spec["suspend"] = kf.suspend
    obj = {"apiVersion": API, "kind": "TrainJob", "metadata": object_meta(job), "spec": spec}
    # overrides.trainjob: the user's merge patch, applied after everything else.
    patched: dict[str, Any] = merge_patch(obj, job.spec.overrides.trainjob)
    return patched


def objects_for_version(job: Job, launch: Launch | None, version: str
                        ) -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) in apply order: ConfigMap, TrainingRuntime, TrainJob.

    ``launch`` is the accelerate launcher's run (None for torchtune: its args come from
    ``kubeflow_torchtune``)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if launch is None:
        return [("trainjob.yaml", trainjob(job, None, version))]
    if launch.files:
        out.append(("configmap.yaml", kfa.configmap(job, launch)))
    if job.spec.deploy.kubeflow.generate_runtime:
        out.append(("trainingruntime.yaml", kfa.training_runtime(job, launch)))
    out.append(("trainjob.yaml", trainjob(job, launch, version)))
    return out


def manifests_for_version(job: Job, version: str) -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) for a given Trainer API generation (``v2.1``, ``v2.2``, ``v2.3``
    or ``auto``) — what the reconciler applies after reading the live CRD (objects only:
    no YAML text is rendered)."""
    ver = resolve_version(job, version)
    if ver not in TRAINER_VERSIONS:
        raise ValueError(f"unknown Kubeflow Trainer version {version!r}")
    return objects_for_version(job, _launch(job), ver)


def compile_for_version(job: Job, version: str) -> list[Artifact]:
    """The artifacts (files) of ``manifests_for_version``."""
    return [Artifact(path, "manifest", partial(to_yaml, obj), obj)
            for path, obj in manifests_for_version(job, version)]


class KubeflowTarget:
    name = "kubeflow"

    def check(self, job: Job) -> list[Diagnostic]:
        return launcher_check(job) + check_for_version(job)

    def compile(self, job: Job) -> list[Artifact]:
        return compile_for_version(job, job.trainer_version)


TARGET: Target = KubeflowTarget()
