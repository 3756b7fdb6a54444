"""``deploy``: where `apply` sends the job, and each platform's knobs."""

from __future__ import annotations

from typing import Literal

from ftspec.spec import patterns
from ftspec.spec.model.base import SpecModel
from ftspec.spec.platforms import DeployTarget, TrainerVersion
from pydantic import Field


class RuntimeRef(SpecModel):
    name: str = Field(min_length=1, max_length=253, description="Training runtime name.")
    kind: Literal["ClusterTrainingRuntime", "TrainingRuntime"] = Field(
        default="ClusterTrainingRuntime", description="Runtime kind."
    )


class Toleration(SpecModel):
    key: str | None = Field(default=None, description="Taint key.")
    operator: Literal["Exists", "Equal"] = Field(default="Equal", description="Match operator.")
    value: str | None = Field(default=None, description="Taint value (Equal).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect."
    )


class Scheduling(SpecModel):
    """Shared-cluster placement, common to the Kubernetes targets."""

    queue: str | None = Field(
        default=None, pattern=patterns.LABEL_VALUE, max_length=63,
        description="Kueue LocalQueue (label kueue.x-k8s.io/queue-name)."
    )
    priority_class: str | None = Field(
        default=None, pattern=patterns.LABEL_VALUE, max_length=63,
        description="Kueue WorkloadPriorityClass / PriorityClass name (a label value)."
    )
    node_selector: dict[str, str] = Field(default_factory=dict, description="Node selector.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Tolerations.")
    image: str | None = Field(
        default=None, description="Trainer container image (defaults to the runtime's)."
    )
    image_pull_secrets: list[str] = Field(
        default_factory=list, description="Secrets used to pull the image."
    )
    service_account: str | None = Field(default=None, description="Pod service account.")


class FailureRule(SpecModel):
    """One JobSet failure-policy rule: what to do when a child Job fails for a listed reason."""

    name: str = Field(min_length=1, max_length=128, description="Rule name (unique).")
    action: Literal["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
                    "RestartJob", "RestartJobAndIgnoreMaxRestarts"] = Field(
        description="RestartJob: restart only the failed Job (Trainer v2.3); RestartJobSet: "
        "every Job; FailJobSet: fail the TrainJob.")
    on_job_failure_reasons: list[str] = Field(
        default_factory=list, description="Job failure reasons (e.g. PodFailurePolicy, "
        "BackoffLimitExceeded) the rule matches; empty = any.")
    on_job_failure_message_patterns: list[str] = Field(
        default_factory=list, description="Regular expressions over the Job's failure message.")
    target_replicated_jobs: list[str] = Field(
        default_factory=list, description="Replicated jobs the rule applies to (e.g. node).")


class FailurePolicy(SpecModel):
    """The runtime's JobSet ``failurePolicy`` (written into the generated TrainingRuntime)."""

    max_restarts: int = Field(default=0, ge=0, le=2**31 - 1,
                              description="Restarts of the whole job before it fails.")
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] = Field(
        default="Recreate", description="How the job's pods are restarted.")
    rules: list[FailureRule] = Field(default_factory=list, description="Rules, first match wins.")


class Kubeflow(SpecModel):
    runtime: RuntimeRef | None = Field(
        default=None,
        description="Runtime the TrainJob references; defaults to the torchtune "
        "ClusterTrainingRuntime for the model family, or the generated runtime.",
    )
    trainer_version: Literal["auto", TrainerVersion] = Field(
        default="auto",
        description="Kubeflow Trainer API generation: v2.1 uses podTemplateOverrides, v2.2+ "
        "runtimePatches. auto = newest for compile, detected from the live CRD for plan.",
    )
    generate_runtime: bool = Field(
        default=False,
        description="Also emit a namespaced TrainingRuntime (accelerate launcher) with the "
        "generated config mounted from a ConfigMap.",
    )
    active_deadline_seconds: int | None = Field(
        default=None, ge=1, description="Fail the TrainJob after this long (v2.2+)."
    )
    suspend: bool = Field(default=False, description="Create suspended (Kueue admits it).")
    failure_policy: FailurePolicy | None = Field(
        default=None, description="Retries when the trainer fails (RestartJob needs Trainer "
        "v2.3); written into the generated TrainingRuntime (generate_runtime).")


class KubeRay(SpecModel):
    ray_version: str = Field(default="2.41.0", description="Ray version of the RayCluster.")
    image: str | None = Field(
        default=None, description="Image for head and workers (default rayproject/ray-ml)."
    )
    head_cpu: str = Field(default="2", description="Head node CPU request.")
    head_memory: str = Field(default="8Gi", description="Head node memory request.")
    shutdown_after_job_finishes: bool = Field(
        default=True, description="Delete the RayCluster when the job ends."
    )
    ttl_seconds_after_finished: int = Field(
        default=600, ge=0, description="Keep the cluster this long after the job ends."
    )
    submission_mode: Literal["K8sJobMode", "HTTPMode", "SidecarMode"] = Field(
        default="K8sJobMode", description="How KubeRay submits the job."
    )
    active_deadline_seconds: int | None = Field(
        default=None, ge=1, description="Fail the RayJob after this long."
    )


class RayJobs(SpecModel):
    address: str | None = Field(
        default=None,
        pattern=patterns.HTTP_URL,
        description="Ray Jobs API (dashboard) URL, e.g. http://127.0.0.1:8265; falls back "
        "to RAY_ADDRESS.",
    )
    pip: list[str] = Field(default_factory=list, description="runtime_env pip packages.")
    env_vars: dict[str, str] = Field(default_factory=dict, description="runtime_env variables.")
    entrypoint_num_cpus: float | None = Field(
        default=None, ge=0, description="CPUs reserved for the entrypoint."
    )


class RoCE(SpecModel):
    """RDMA over Converged Ethernet for multi-node runs (the SFTTrainer seed's
    ``enable_roce``): each node's bundle asks for the RoCE resource and its processes get
    NCCL's RoCE settings; KubeRay workers also get IPC_LOCK and the RDMA devices."""

    enabled: bool = Field(default=False, description="Switch RoCE on (multi-node runs only).")
    resource: str = Field(
        default="RoCE", min_length=1,
        description="Ray custom resource that RoCE-ready nodes advertise (1 per node bundle).",
    )
    hca: str | None = Field(
        default=None, description="NCCL_IB_HCA: the RoCE v2 devices, e.g. =mlx5_0,mlx5_3."
    )
    gid_index: int | None = Field(
        default=None, ge=0, description="NCCL_IB_GID_INDEX: a GID index mapping to RoCE v2."
    )
    devices_per_node: int = Field(
        default=0, ge=0,
        description="KubeRay: RDMA devices each worker requests (nvidia.com/roce_gdr).",
    )


class RayNodes(SpecModel):
    """How the ray and kuberay targets place each node of a run: one placement-group bundle
    per node (STRICT_SPREAD) with the node's GPUs and CPUs plus these Ray resources."""

    gpu_resource: str | None = Field(
        default=None,
        description="Custom Ray resource naming the GPU model, asked for with the node's GPU "
        "count (e.g. NVIDIA-A100-SXM4-80GB: 8); `auto` = the accelerator catalog's name. "
        "Unset: Ray's own accelerator_type:<type> resource.",
    )
    whole_node_resource: str | None = Field(
        default=None,
        description="Custom resource a node has exactly one of (e.g. full-worker): each "
        "bundle asks for 1, so a node runs one ftspec node process and nothing else that asks.",
    )
    extra_resources: dict[str, float] = Field(
        default_factory=dict, description="More custom Ray resources each node bundle asks for."
    )
    cpus: float | None = Field(
        default=None, gt=0,
        description="CPUs each node bundle reserves; default resources.cpu, else 1.",
    )
    roce: RoCE = Field(default_factory=RoCE, description="RDMA over Converged Ethernet.")
    ready_timeout_s: float = Field(
        default=600, gt=0,
        description="How long the driver waits for the cluster to place every node bundle.",
    )


class Local(SpecModel):
    workdir: str = Field(
        default=".ftspec/runs",
        description="Where runs write outputs and logs (relative to the working directory).",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")


class Deploy(SpecModel):
    target: DeployTarget = Field(
        default="local",
        description="Where `apply` sends the job: local (this machine), kubeflow (TrainJob), "
        "kuberay (RayJob) or ray (Ray Jobs API of an existing cluster).",
    )
    kubeflow: Kubeflow = Field(default_factory=Kubeflow, description="Kubeflow Trainer settings.")
    kuberay: KubeRay = Field(default_factory=KubeRay, description="KubeRay RayJob settings.")
    ray: RayJobs = Field(default_factory=RayJobs, description="Ray Jobs API settings.")
    local: Local = Field(default_factory=Local, description="Local backend settings.")
    ray_nodes: RayNodes = Field(
        default_factory=RayNodes,
        description="Ray resources of each node (ray and kuberay targets, multi-node runs).",
    )
    scheduling: Scheduling = Field(
        default_factory=Scheduling, description="Shared-cluster placement (Kubernetes targets)."
    )
