"""``FineTuneSpec``: the whole document."""

from __future__ import annotations

from typing import Any, Literal

from ftspec.spec import patterns
from ftspec.spec.model.base import URI_PATTERN, SpecModel
from ftspec.spec.model.data import DataSpec
from ftspec.spec.model.deploy import Deploy
from ftspec.spec.model.distributed import Distributed
from ftspec.spec.model.metadata import Metadata
from ftspec.spec.model.method import Method
from ftspec.spec.model.model import ModelSpec
from ftspec.spec.model.resources import Resources
from ftspec.spec.model.sweep import Sweep
from ftspec.spec.model.training import Training
from ftspec.spec.platforms import Launcher
from ftspec.spec.urls import is_uri
from pydantic import Field

API_VERSION = "ftspec.dev/v1alpha1"
KIND = "FineTune"


class SecretKeyRef(SpecModel):
    name: str = Field(min_length=1, description="Kubernetes Secret name.")
    key: str = Field(default="token", min_length=1, description="Key inside the Secret.")


class SecretRef(SpecModel):
    secretRef: SecretKeyRef | None = Field(
        default=None, description="A key of a Kubernetes Secret."
    )
    env: str | None = Field(
        default=None,
        pattern=patterns.ENV_NAME,
        description="Name of an environment variable holding the value (local and Ray).",
    )


class Output(SpecModel):
    uri: str = Field(
        pattern=URI_PATTERN,
        description="Where checkpoints and adapters go: pvc://, s3://, file://…",
    )
    save_adapter_only: bool = Field(
        default=True, description="PEFT methods: save only the adapter weights."
    )
    merge_adapter: bool = Field(default=False, description="Also save base+adapter merged.")
    push_to_hub: str | None = Field(default=None, description="Hub repo to upload to.")


class Entrypoint(SpecModel):
    """The training program `accelerate launch` runs (default: ftspec's HF SFT entrypoint)."""

    module: str | None = Field(
        default=None,
        pattern=patterns.MODULE,
        description="Python module run with -m (default ftspec.runtime.hf_sft).",
    )
    script: str | None = Field(default=None, description="A script path instead of a module.")
    args: list[str] = Field(default_factory=list, description="Extra arguments appended.")


class Overrides(SpecModel):
    """Escape hatches: raw keys passed through to one launcher or platform object."""

    torchtune: dict[str, Any] = Field(
        default_factory=dict,
        description="Raw torchtune config keys (dotted paths), applied last.",
    )
    accelerate: dict[str, Any] = Field(
        default_factory=dict, description="Raw accelerate config keys, applied last."
    )
    training_args: dict[str, Any] = Field(
        default_factory=dict, description="Extra --flags for the accelerate entrypoint."
    )
    trainjob: dict[str, Any] = Field(
        default_factory=dict, description="A merge patch applied to the generated TrainJob."
    )
    rayjob: dict[str, Any] = Field(
        default_factory=dict, description="A merge patch applied to the generated RayJob."
    )


class FineTuneSpec(SpecModel):
    apiVersion: Literal["ftspec.dev/v1alpha1"] = Field(description="Spec format version.")
    kind: Literal["FineTune"] = Field(description="Document kind.")
    metadata: Metadata = Field(description="Name, namespace and labels of the job.")
    model: ModelSpec = Field(description="The model fine-tuned.")
    data: DataSpec = Field(description="Training (and evaluation) data.")
    method: Method = Field(default_factory=Method, description="Fine-tuning method.")
    training: Training = Field(description="Optimization hyperparameters.")
    distributed: Distributed = Field(
        default_factory=Distributed, description="Parallelism strategy."
    )
    resources: Resources = Field(default_factory=Resources, description="Nodes and devices.")
    output: Output | None = Field(default=None, description="Where results are written.")
    launcher: Launcher = Field(
        default="torchtune", description="What runs the training: torchtune, accelerate (TRL) or "
        "fms_hf_tuning (fms-hf-tuning's tuning.sft_trainer under accelerate)."
    )
    entrypoint: Entrypoint = Field(
        default_factory=Entrypoint, description="Training program for the accelerate launcher."
    )
    deploy: Deploy = Field(default_factory=Deploy, description="Where and how to run it.")
    secrets: dict[str, SecretRef] = Field(
        default_factory=dict,
        description="Credentials by reference only (e.g. hf_token: {secretRef: {name, key}}); "
        "literal values are rejected.",
    )
    overrides: Overrides = Field(default_factory=Overrides, description="Escape hatches.")
    sweep: Sweep | None = Field(
        default=None, description="A grid over spec fields: one run per point (the spec's "
        "own values are the defaults every point starts from).")

    def uris(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every location the spec names, as (key path, URI), in document order: the one
        list that path mapping, volume mounts and the location checks all read."""
        found: list[tuple[tuple[str | int, ...], str | None]] = [
            (("model", "uri"), self.model.uri),
            (("model", "tokenizer", "uri"), self.model.tokenizer.uri),
            (("model", "tokenizer", "special_tokens_uri"),
             self.model.tokenizer.special_tokens_uri),
        ]
        d = self.data
        if d.train is not None:
            found.append((("data", "train", "uri"), d.train.uri))
        if d.mixture is not None:
            found += [(("data", "mixture", "datasets", i, "uri"), ds.uri)
                      for i, ds in enumerate(d.mixture.datasets)]
        if d.validation is not None:
            found.append((("data", "validation", "uri"), d.validation.uri))
        if self.output is not None:
            found.append((("output", "uri"), self.output.uri))
        resume = self.training.checkpointing.resume_from
        if resume is not None and is_uri(resume):  # else a path where the launcher runs
            found.append((("training", "checkpointing", "resume_from"), resume))
        return [(path, uri) for path, uri in found if uri]
