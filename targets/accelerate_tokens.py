"""instruct / alpaca data on the accelerate launcher: tokenized as torchtune tokenizes it.

torchtune's builders tokenize each message apart through the model's torchtune tokenizer
(its prompt template or role headers, per-message whitespace rules); TRL tokenizes rendered
text at once. To make one spec one training, the accelerate entrypoint tokenizes these rows
with torchtune's own tokenizer and message transforms (``runtime/hf_sft/torchtune_rows``)
and hands TRL ``input_ids`` + ``completion_mask``; this module writes the tokenizer section
it needs into ``prepare.json`` and says where that cannot be done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings, KeyPath
from ftspec.spec.ir import Job
from ftspec.spec.model.data import Dataset
from ftspec.targets.paths import RunPaths

TORCHTUNE_TOKENIZED = frozenset({"instruct", "alpaca"})
"""Formats whose tokens are defined by torchtune's builders (instruct_dataset, alpaca_dataset)."""

_FINDINGS = Findings("target.accelerate")


def _datasets(job: Job) -> Iterator[tuple[KeyPath, Dataset]]:
    from ftspec.spec.rules.data import datasets

    return datasets(job.spec)


def torchtune_tokenized(job: Job) -> bool:
    """The rows go to TRL tokenized by torchtune's tokenizer. A model torchtune has no
    tokenizer for runs on this launcher only: its instruct / alpaca rows are rendered as
    prompt / completion text (the Alpaca prompt for alpaca) and tokenized by TRL."""
    from ftspec.targets.torchtune import tokenizer_config

    return any(rows.format in TORCHTUNE_TOKENIZED for rows in job.row_format.datasets) \
        and tokenizer_config(job) is not None


def check(job: Job) -> Iterator[Diagnostic]:
    """Where instruct / alpaca rows cannot get torchtune's tokens under this launcher."""
    tokenized = torchtune_tokenized(job)
    others = [(path, ds) for path, ds in _datasets(job) if ds.format not in TORCHTUNE_TOKENIZED]
    for path, ds in others if tokenized else []:
        yield _FINDINGS.error((*path, "format"), f"{ds.format} rows cannot share a run with "
                              "instruct / alpaca rows on the accelerate launcher: those are "
                              "tokenized as torchtune does, these by TRL", "token-identity",
                              hint="use the same format for every dataset, or launcher: "
                              "torchtune")
    for path, ds in _datasets(job):
        if ds.format not in TORCHTUNE_TOKENIZED:
            continue
        for field in ("prompt_template", "prompt_func", "completion_template",
                      "completion_func", "response_template"):
            if getattr(ds, field) is not None:
                yield _FINDINGS.error((*path, field), f"{ds.format} rows are built by "
                                      "torchtune's message transform (a column_map), not by "
                                      "prompt templates or functions", "token-identity",
                                      hint="use format: completion for templated rows")
        if ds.format == "alpaca" and ds.new_system_prompt is not None:
            yield _FINDINGS.error((*path, "new_system_prompt"), "torchtune's alpaca rows take "
                                  "no system prompt", "token-identity",
                                  hint="use format: instruct with column_map, or chat")


TOKENIZER_FILES = ("path", "merges_file", "special_tokens_path")
"""torchtune tokenizer arguments that name files."""


def prepare_entry(job: Job, p: RunPaths) -> dict[str, Any] | None:
    """prepare.json's ``torchtune_tokenizer`` (None: TRL tokenizes the rows); reading the
    shipped config needs torchtune installed, as compiling for torchtune does. Files inside
    the model's folder are given relative to it under ``model_files``: the accelerate
    launcher has no downloaded model folder when the model is a hub id, so the entrypoint
    fetches them from the hub (``model``) or reads them from the local model folder."""
    if not torchtune_tokenized(job):
        return None
    from ftspec.targets.torchtune import tokenizer_section

    section = dict(tokenizer_section(job, p))
    prefix = p.model_dir.rstrip("/") + "/"
    inside = {k: section.pop(k)[len(prefix):] for k in TOKENIZER_FILES
              if isinstance(section.get(k), str) and section[k].startswith(prefix)}
    out: dict[str, Any] = {"section": section}
    if inside:
        out["model"] = p.model_id
        out["model_files"] = inside
        if job.spec.model.revision is not None:
            out["revision"] = job.spec.model.revision
    return out
