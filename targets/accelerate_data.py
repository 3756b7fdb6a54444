"""The data half of the accelerate launcher's artifacts: which rows TRL reads as they are,
and prepare.json's sources (a JSON list of source objects, each with ``source``:
``hf://org/name`` or a path, and only its non-default keys) for the rest.
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import Job
from ftspec.spec.model.data import Dataset
from ftspec.spec.rows import dataset_rows
from ftspec.targets.chat_format import torchtune_layout
from ftspec.targets.paths import DataSource, data_source

DEFAULT_TEMPLATES: dict[str, tuple[str, str]] = {
    "prompt_completion": ("{prompt}", "{completion}"),
}
"""Format -> the (prompt, completion) templates it renders with unless the spec gives its own."""
RENDERING = ("format", "as_chat", "column_map", "prompt_template", "completion_template",
             "prompt_func", "completion_func", "text_field", "conversation_column",
             "conversation_style", "new_system_prompt",
             "response_template", "train_on_input", "image_field", "image_dir", "image_tag")
"""Dataset fields that decide how a row becomes text (the rest say where the rows are)."""


def _templates(ds: Dataset) -> tuple[str | None, str | None]:
    prompt, completion = ds.prompt_template, ds.completion_template
    if ds.format in DEFAULT_TEMPLATES:
        default_prompt, default_completion = DEFAULT_TEMPLATES[ds.format]
        if prompt is None and ds.prompt_func is None:
            prompt = default_prompt
        if completion is None and ds.completion_func is None:
            completion = default_completion
    return prompt, completion


def rendering(ds: Dataset) -> dict[str, Any]:
    """The entrypoint's source keys for how ``ds`` renders (defaults left out)."""
    prompt, completion = _templates(ds)
    rows = dataset_rows(ds)
    out: dict[str, Any] = {"format": "chat" if ds.format == "sharegpt" else ds.format}
    if ds.column_map:
        out["column_map"] = dict(sorted(ds.column_map.items()))
    for key, value in (("prompt_template", prompt), ("completion_template", completion),
                       ("prompt_func", ds.prompt_func), ("completion_func", ds.completion_func),
                       ("text_field", ds.text_field),
                       ("conversation_column", ds.conversation_column
                        or rows.column("messages")),  # chat rows: torchtune's default
                       ("conversation_style", "sharegpt" if ds.format == "sharegpt"
                        else ds.conversation_style),
                       ("new_system_prompt", ds.new_system_prompt),
                       ("response_template", ds.response_template),
                       ("image_field", ds.image_field), ("image_dir", ds.image_dir),
                       ("image_tag", ds.image_tag)):
        if value is not None:
            out[key] = value
    if ds.trains_on_input:
        out["train_on_input"] = True
    if ds.format == "instruct" and ds.as_chat:  # the row's own input / output columns
        out["as_chat"] = True
        for key in ("prompt_template", "completion_template"):
            out.pop(key, None)
    return out


def is_chat(ds: Dataset) -> bool:
    """Rows rendered as conversations: chat, or instruct rows with as_chat."""
    return dataset_rows(ds).conversation


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


def trl_reads(ds: Dataset) -> bool:
    """TRL's ``trl sft`` reads these rows as they are (no rendering by ftspec)."""
    keys = set(rendering(ds))
    if ds.format == "text":
        return keys <= {"format", "text_field"}
    if ds.format == "prompt_completion":  # TRL's own prompt-completion rows
        return keys <= {"format", "prompt_template", "completion_template", "train_on_input"} \
            and not ds.column_map and ds.prompt_template is None
    if ds.format == "completion":  # rows with prompt / completion columns
        return keys <= {"format", "train_on_input"}
    if ds.format == "chat":
        return keys <= {"format", "conversation_column", "conversation_style",
                        "train_on_input"} \
            and ds.conversation_column == "messages" and ds.conversation_style == "openai"
    # (no conversation_column: torchtune's default, a ShareGPT "conversations" column)
    return False


def _entry(job: Job, ds: Dataset) -> dict[str, Any]:
    out = source_object(ds)
    layout = torchtune_layout(job)
    if is_chat(ds) and layout is not None:  # torchtune's tokens, message by message
        out["chat_layout"] = layout
        out["max_seq_len"] = job.max_seq_len
    return out


def prepare_sources(job: Job, train: DataSource) -> dict[str, Any]:
    """prepare.json's data keys; ``train`` is where the launcher finds data.train."""
    d = job.spec.data
    out: dict[str, Any] = {}
    if d.mixture is not None:
        out["train"] = [_entry(job, ds) for ds in d.mixture.datasets]
        out["mixture_strategy"] = d.mixture.strategy
    else:
        assert d.train is not None
        entry = _entry(job, d.train)
        entry["source"] = _location(train)
        out["train"] = [entry]
    if d.validation is not None:
        out["validation"] = _entry(job, d.validation)
    if d.validation_split_ratio is not None:
        out["validation_split_ratio"] = d.validation_split_ratio
    return out
