"""Where a launcher finds the model, tokenizer and data, and where it writes.

The spec names locations by URI; a launcher needs paths on the machine that runs it. The
default mapping (``default_paths``) is for the machine the launcher runs on directly:

- ``file://x``           -> ``x`` (relative to the working directory; ``file:///abs`` -> ``/abs``)
- ``pvc://claim/path``   -> ``/mnt/claim/path`` (platform targets mount the claim there)
- ``hf://org/name``      -> the hub id ``org/name`` (accelerate/transformers download it);
  torchtune needs a local checkpoint folder, by its own convention ``/tmp/name``
  (``tune download org/name --output-dir /tmp/name``)
- other schemes (``s3://``, ``gs://``, ``http(s)://``) -> ``/tmp/<last path part>``, where an
  initializer or a download step must put them.

Platform targets pass their own ``RunPaths`` to a launcher's ``launch(job, paths)`` (the
Kubeflow runtimes put the model in ``/workspace/model``, for example).
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.ir import Job
from ftspec.spec.urls import hub_id, rest, scheme

PVC_MOUNT_ROOT = "/mnt"


@dataclass(frozen=True)
class DataSource:
    """A training dataset as a launcher reads it: a hub dataset or local file(s)."""

    hub_name: str | None = None
    """Hugging Face Hub dataset id (``tatsu-lab/alpaca``)."""
    files: str | None = None
    """A local JSON/JSONL file (or folder) path."""


@dataclass(frozen=True)
class RunPaths:
    model_dir: str
    """Local folder with the weights (torchtune's checkpoint_dir)."""
    model_id: str
    """What Hugging Face loaders take: the hub id for hf:// models, else ``model_dir``."""
    tokenizer: str | None
    """Tokenizer file or folder when the spec names one (else the model's own)."""
    special_tokens: str | None
    train: DataSource
    output_dir: str


def local_path(uri: str) -> str:
    """The path where ``uri`` lies on the machine that runs the launcher (see module doc)."""
    kind = scheme(uri)
    tail = rest(uri)
    if kind == "file":
        return tail
    if kind == "pvc":
        return f"{PVC_MOUNT_ROOT}/{tail.strip('/')}"
    return "/tmp/" + tail.rstrip("/").rsplit("/", 1)[-1]


def data_source(uri: str) -> DataSource:
    if scheme(uri) == "hf":
        return DataSource(hub_name=hub_id(uri))
    return DataSource(files=local_path(uri))


def default_paths(job: Job) -> RunPaths:
    spec = job.spec
    model_uri = spec.model.uri
    model_dir = local_path(model_uri)
    model_id = hub_id(model_uri) if scheme(model_uri) == "hf" else model_dir
    tok = spec.model.tokenizer
    train = spec.data.train
    if spec.output is not None:
        output_dir = local_path(spec.output.uri)
    else:
        output_dir = f"{spec.deploy.local.workdir.rstrip('/')}/{job.name}"
    return RunPaths(
        model_dir=model_dir,
        model_id=model_id,
        tokenizer=local_path(tok.uri) if tok.uri else None,
        special_tokens=local_path(tok.special_tokens_uri) if tok.special_tokens_uri else None,
        train=data_source(train.uri) if train is not None else DataSource(),
        output_dir=output_dir,
    )
