"""The IR: a ``Job`` is a validated spec plus every derived value, computed once.

Targets read the Job, never the raw spec arithmetic: batch math, topology, naming and the
memory estimate live here (built by ``ftspec.compiler.build``) so no target recomputes them.

A Job read back from the compile cache (``ftspec.compiler.cache_codec``) carries its spec
as JSON text, validated into the model on first use (``ftspec.spec.kept``): commands that
read only the derived values (``plan`` over specs that did not change) never import the
pydantic models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ftspec.spec.catalog.blocks import LinearAttentionFacts, MambaFacts, VisionFacts
from ftspec.spec.kept import Deferred
from ftspec.spec.platforms import (
    LAUNCHER_FACTS,
    NEWEST_TRAINER,
    DeployTarget,
    Launcher,
    LauncherFacts,
)

SPEC_HASH_ANNOTATION = "ftspec.dev/spec-hash"
"""Written by ftspec before the applied record (``ftspec.dev/applied``); only read now, so
objects an older ftspec applied compare equal (it changed with every new default)."""

if TYPE_CHECKING:
    from ftspec.spec.model import FineTuneSpec


@dataclass(frozen=True)
class ModelFacts:
    """Architecture facts of the model, from its family or custom dimensions."""

    display: str
    params_b: float
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    hf_layer_cls: str
    torchtune_config: tuple[str, str] | None
    """(config folder, size prefix) of torchtune's shipped configs, if any."""
    torchtune_builder: str | None
    """Module with torchtune builders (``torchtune.models.llama3_2``)."""
    custom: bool = False
    """True when the dimensions come from ``model.architecture``."""
    head_dim: int = 0
    """Attention head size (0: hidden_size / num_heads)."""
    tied_embeddings: bool = False
    num_experts: int = 0
    """Mixture-of-experts: experts per MoE layer (0: dense); intermediate_size is per expert."""
    gated_mlp: bool = True
    """gate/up/down projections (3 matrices) or up/down only (2)."""
    context_len: int = 0
    """The longest sequence the model supports (prices ``data.max_seq_len: null``)."""
    shared_intermediate_size: int = 0
    """Mixture-of-experts: a shared expert's MLP size beside the routed ones."""
    mamba: MambaFacts | None = None
    """Hybrid Mamba-2 / attention stacks: the Mamba-2 layers."""
    vision: VisionFacts | None = None
    """Vision-language models: the image encoder and projector."""
    moe_layer_step: int = 1
    """Mixture-of-experts: every n-th layer is MoE, the others dense (1: every layer)."""
    dense_intermediate_size: int = 0
    """The dense layers' MLP size where MoE and dense layers interleave."""
    linear_attention: LinearAttentionFacts | None = None
    """Hybrid gated linear-attention / attention stacks: the linear layers."""
    attn_output_gate: bool = False
    """Attention's output gated by a sigmoid of a second ``q_proj`` half (Qwen3.5)."""

    @property
    def attn_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak memory per device, GiB, by component; ``fits`` against the accelerator."""

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    """Tensors the decoder layers keep for backward at the peak (or their checkpoints)."""
    logits_gib: float
    """The loss head's tensors at the peak (torchtune's logits; TRL's fused-head tiles)."""
    overhead_gib: float
    trainable_params_b: float
    capacity_gib: float | None
    notes: tuple[str, ...] = ()

    @property
    def total_gib(self) -> float:
        return (self.weights_gib + self.gradients_gib + self.optimizer_gib
                + self.activations_gib + self.logits_gib + self.overhead_gib)

    @property
    def fits(self) -> bool | None:
        if self.capacity_gib is None:
            return None
        return self.total_gib <= self.capacity_gib


RowFormatName = Literal["instruct", "alpaca", "chat", "sharegpt", "text", "completion",
                        "prompt_completion", "multimodal"]
"""``data.*.format`` values (the spec model's ``DatasetFormat`` is this type)."""


ColumnRole = Literal["instruction", "input", "output", "prompt", "completion", "messages",
                     "text", "template"]
"""What a column is to its format (``template``: a field a prompt/completion template names)."""


@dataclass(frozen=True)
class RowColumn:
    """One dataset column a format reads: its name in the rows (after ``column_map``), its
    role, the spec field (relative to the dataset) that asks for it, and the value it must
    hold: ``text``, ``messages`` (a list of message objects) or ``any`` (formatted into a
    template: anything but null)."""

    name: str
    role: ColumnRole
    field: tuple[str | int, ...]
    value: Literal["text", "messages", "any"]


@dataclass(frozen=True)
class DatasetRows:
    """One dataset's rows as its format reads them (built by ``ftspec.spec.rows``)."""

    path: tuple[str | int, ...]
    """Where the dataset is in the spec (``("data", "train")``)."""
    format: RowFormatName
    columns: tuple[RowColumn, ...]
    """The columns every row must hold, in the order the format names them."""
    loss: Literal["completion", "all"]
    """Which tokens the loss counts: the completion / assistant turns only, or every one
    (``text`` rows, or ``train_on_input``)."""
    conversation: bool
    """Rows rendered as conversations: chat / sharegpt, or instruct rows with ``as_chat``."""

    def column(self, role: ColumnRole) -> str | None:
        """The column that plays ``role``, if the format reads one."""
        return next((c.name for c in self.columns if c.role == role), None)

    def column_for(self, role: ColumnRole) -> str:
        """The column that plays ``role``, which the format reads (a bug otherwise)."""
        name = self.column(role)
        if name is None:
            raise LookupError(f"{self.format} rows have no {role} column")
        return name


@dataclass(frozen=True)
class RowFormat:
    """How the training rows are laid out: the format of each training dataset (``data.train``,
    or each ``data.mixture`` dataset in order). Every launcher builds its data pipeline from
    it, and the summary names it, so a change of format reads in ``plan``."""

    formats: tuple[RowFormatName, ...] = ()
    datasets: tuple[DatasetRows, ...] = field(default=(), compare=False)
    """Every dataset of the spec (training ones first, then ``data.validation``): the
    columns its format reads and its loss mask, derived once (``ftspec.spec.rows``). Left
    out of equality: two row formats are equal when their formats are (the columns follow
    from the spec, which ``Job.spec_hash`` covers)."""

    def at(self, path: tuple[str | int, ...]) -> DatasetRows | None:
        """The rows of the dataset at ``path``; None where there is none."""
        return next((rows for rows in self.datasets if rows.path == path), None)

    @property
    def training(self) -> tuple[DatasetRows, ...]:
        """The training datasets' rows (``data.train`` or the mixture's, in order)."""
        return tuple(r for r in self.datasets if r.path[:2] != ("data", "validation"))

    @property
    def name(self) -> str:
        """The formats, each once, in order (``alpaca``, ``chat+text``); ``-`` without data."""
        return "+".join(dict.fromkeys(self.formats)) or "-"

    @property
    def only(self) -> RowFormatName | None:
        """The one format every training dataset has, or None (mixed or no data)."""
        kinds = set(self.formats)
        return self.formats[0] if len(kinds) == 1 else None


@dataclass(frozen=True)
class InputRef:
    """One location a job reads (``FineTuneSpec.uris`` less the output), with what the plan
    needs to tell whether its content changed: kept in the IR so that a warm ``plan`` reads
    them without validating the spec again."""

    field: str
    """The spec key path, dotted (``data.train.uri``, ``data.mixture.datasets.0.uri``)."""
    uri: str
    identity: Literal["content", "path"] = "content"
    """The holder's ``identity`` field: ``path`` keeps the path as the input's identity."""
    loader: str | None = None
    """A dataset's ``loader`` (its file format), for the content digest's row reading."""
    revision: str | None = None
    """``model.revision`` for ``model.uri``; None elsewhere."""


@dataclass(frozen=True)
class Job(Deferred):
    spec: FineTuneSpec
    spec_id: str
    spec_hash: str
    """sha256 (hex, 16 chars) of the canonical spec with every default: changes whenever
    the spec or one of ftspec's defaults does. A cache key only: never written into
    artifacts or live objects, never compared by ``plan`` (see ``written``)."""
    name: str
    namespace: str
    launcher: Launcher
    target: DeployTarget
    nodes: int
    procs_per_node: int
    world_size: int
    gpus_per_node: int
    total_gpus: int
    device: Literal["cuda", "cpu"]
    strategy: Literal["none", "ddp", "fsdp", "deepspeed"]
    """``distributed.strategy`` with ``auto`` resolved."""
    micro_batch_size: int
    gradient_accumulation_steps: int
    global_batch_size: int
    max_seq_len: int | None
    """``data.max_seq_len``; None: no truncation."""
    tokens_per_step: int
    """Upper bound: global batch x max_seq_len (the model's context when None)."""
    steps_per_epoch: int | None
    total_steps: int | None
    warmup_steps: int | None
    """Resolved from warmup_steps or warmup_ratio x total steps, when known."""
    model: ModelFacts
    lora_modules: tuple[str, ...]
    """Hugging Face module names LoRA adapts (target_modules, plus MLP ones when mlp)."""
    memory: MemoryEstimate
    row_format: RowFormat = field(default_factory=RowFormat)
    """The training rows' format (``data.train.format`` / each mixture dataset's)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Ownership labels every platform object carries (plus metadata.labels)."""
    annotations: dict[str, str] = field(default_factory=dict)
    trainer_version: str = NEWEST_TRAINER
    """The Kubeflow Trainer API generation the kubeflow target renders for: the live
    cluster's when a backend detected it, else ``deploy.kubeflow.trainer_version``
    (``auto`` = newest)."""
    trainer_pin: str | None = None
    """``deploy.kubeflow.trainer_version`` unless ``auto``: the version the spec insists on."""
    written: str = ""
    """sha256 (hex, 16 chars) of the spec as the user wrote it (overlays and ``--set``
    included, defaults not): tells a change the user made from one a new ftspec makes."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """Every value the spec took from ftspec's defaults, by dotted key path
    (``training.seed``): what ``plan`` names when an upgrade changed one."""
    point: dict[str, Any] = field(default_factory=dict)
    """The sweep point this job is (dotted path -> value, ``sweep.grid``'s order); empty
    outside a sweep."""
    inputs: tuple[InputRef, ...] = ()
    cluster_runtime: tuple[str, str] | None = None
    """(kind, name) of the runtime a kubeflow TrainJob references when only the cluster
    knows the name limit it sets (``plan`` reads it: ``reconciler.kubernetes.names``);
    None when ``validate`` knew the limit or there is no such runtime."""
    """What the job reads, in the spec's order (``compiler.build.input_refs``)."""
    summary: dict[str, str] = field(default_factory=dict)
    """The job in ML terms (``ftspec.compiler.summary.ml_summary``): what ``explain`` shows,
    what platform objects carry and what ``plan`` words its changes with."""

    @property
    def launcher_facts(self) -> LauncherFacts:
        """What the compiler and backends know of the launcher (``spec.platforms``)."""
        return LAUNCHER_FACTS[self.launcher]
