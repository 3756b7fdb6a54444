"""The data flags of the accelerate entrypoint: training source(s), mixture and validation.

One training dataset becomes ``--train_file PATH`` or ``--dataset_name ORG/NAME`` plus its
rendering flags; a mixture becomes ``--mixture`` (a JSON list of source objects, each with
``source``: ``hf://org/name`` or a path, and only its non-default keys) and
``--mixture_strategy``. Validation data rendered like the (first) training dataset takes the
short flags (``--validation_file`` / ``--validation_dataset_name`` / ``--validation_split``);
otherwise ``--validation_source`` carries the whole source object.
"""

from __future__ import annotations

import json
from typing import Any

from ftspec.spec.ir import Job
from ftspec.spec.model.data import Dataset
from ftspec.targets.paths import DataSource, data_source

INSTRUCT_PROMPT = "{input}"
INSTRUCT_COMPLETION = "{output}"
RENDERING = ("format", "column_map", "prompt_template", "completion_template", "prompt_func",
             "completion_func", "text_field", "conversation_column", "new_system_prompt",
             "response_template", "train_on_input")
"""Dataset fields that decide how a row becomes text (the rest say where the rows are)."""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _templates(ds: Dataset) -> tuple[str | None, str | None]:
    prompt, completion = ds.prompt_template, ds.completion_template
    if ds.format == "instruct":
        if prompt is None and ds.prompt_func is None:
            prompt = INSTRUCT_PROMPT
        if completion is None and ds.completion_func is None:
            completion = INSTRUCT_COMPLETION
    return prompt, completion


def rendering(ds: Dataset) -> dict[str, Any]:
    """The entrypoint's source keys for how ``ds`` renders (defaults left out)."""
    prompt, completion = _templates(ds)
    out: dict[str, Any] = {"format": ds.format}
    if ds.column_map:
        out["column_map"] = dict(sorted(ds.column_map.items()))
    for key, value in (("prompt_template", prompt), ("completion_template", completion),
                       ("prompt_func", ds.prompt_func), ("completion_func", ds.completion_func),
                       ("text_field", ds.text_field),
                       ("conversation_column", ds.conversation_column),
                       ("new_system_prompt", ds.new_system_prompt),
                       ("response_template", ds.response_template)):
        if value is not None:
            out[key] = value
    if ds.train_on_input:
        out["train_on_input"] = True
    return out


def _flags_of(render: dict[str, Any]) -> list[str]:
    flag = {"format": "--dataset_format", "prompt_template": "--prompt_template",
            "completion_template": "--completion_template", "prompt_func": "--prompt_func",
            "completion_func": "--completion_func", "text_field": "--dataset_text_field",
            "conversation_column": "--conversation_column",
            "new_system_prompt": "--new_system_prompt",
            "response_template": "--response_template"}
    args: list[str] = []
    for key, value in render.items():
        if key == "column_map":
            args += ["--column_map", _json(value)]
        elif key == "train_on_input":
            args.append("--train_on_input")
        else:
            args += [flag[key], value]
    return args


def _location(src: DataSource) -> str:
    return f"hf://{src.hub_name}" if src.hub_name is not None else src.files or ""


def source_object(ds: Dataset) -> dict[str, Any]:
    """One ``--mixture`` / ``--validation_source`` entry."""
    out: dict[str, Any] = {"source": _location(data_source(ds.uri))}
    if ds.split != "train":
        out["split"] = ds.split
    if ds.subset is not None:
        out["subset"] = ds.subset
    out.update(rendering(ds))
    if ds.proportion is not None:
        out["proportion"] = ds.proportion
    return out


def data_args(job: Job, train: DataSource) -> list[str]:
    """Training and validation data flags; ``train`` is where the launcher finds data.train."""
    d = job.spec.data
    args: list[str] = []
    if d.mixture is not None:
        args += ["--mixture", _json([source_object(ds) for ds in d.mixture.datasets]),
                 "--mixture_strategy", d.mixture.strategy]
        reference = d.mixture.datasets[0]
    else:
        assert d.train is not None
        reference = d.train
        if train.hub_name is not None:
            args += ["--dataset_name", train.hub_name]
            if reference.subset is not None:
                args += ["--dataset_subset", reference.subset]
            if reference.split != "train":
                args += ["--train_split", reference.split]
        else:
            args += ["--train_file", train.files or ""]
        args += _flags_of(rendering(reference))
    args += _validation_args(job, reference, train)
    if not d.shuffle:
        args.append("--no_shuffle")
    if d.packed:
        args.append("--packing")
    if d.num_workers:
        args += ["--dataloader_num_workers", str(d.num_workers)]
    return args


def _validation_args(job: Job, reference: Dataset, train: DataSource) -> list[str]:
    d = job.spec.data
    if d.validation_split_ratio is not None:
        return ["--validation_split_ratio", repr(d.validation_split_ratio)]
    val = d.validation
    if val is None:
        return []
    if rendering(val) != rendering(reference) or val.subset != reference.subset:
        return ["--validation_source", _json(source_object(val))]
    src = data_source(val.uri)
    if src.hub_name is None:
        return ["--validation_file", src.files or ""]
    args = [] if src.hub_name == train.hub_name and d.mixture is None else \
        ["--validation_dataset_name", src.hub_name]
    return args + ["--validation_split", val.split]
