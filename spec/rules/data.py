"""Datasets: one source of training data, mixtures that add up, exclusive templates."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, KeyPath
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.data import Dataset
from ftspec.spec.rules._diag import error
from ftspec.spec.urls import hub_parts, rest, scheme


def datasets(spec: FineTuneSpec) -> Iterator[tuple[KeyPath, Dataset]]:
    d = spec.data
    if d.train is not None:
        yield ("data", "train"), d.train
    if d.mixture is not None:
        for i, ds in enumerate(d.mixture.datasets):
            yield ("data", "mixture", "datasets", i), ds
    if d.validation is not None:
        yield ("data", "validation"), d.validation


def train_or_mixture(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    d = spec.data
    if d.train is None and d.mixture is None:
        yield error(("data",), "no training data: give data.train or data.mixture",
                    "data-missing")
    elif d.train is not None and d.mixture is not None:
        yield error(("data", "mixture"), "give data.train or data.mixture, not both",
                    "data-both")
    if d.train is not None and d.train.proportion is not None:
        yield error(("data", "train", "proportion"),
                    "proportion only applies to datasets in data.mixture", "proportion-unused")


def mixture_proportions(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    mixture = spec.data.mixture
    if mixture is None:
        return
    if mixture.strategy == "concatenate":
        for i, ds in enumerate(mixture.datasets):
            if ds.proportion is not None:
                yield error(("data", "mixture", "datasets", i, "proportion"), "a "
                            "concatenation reads every row of every dataset once: no "
                            "proportions", "proportion-concatenate",
                            hint="remove proportion, or mix by proportion (strategy "
                            "first_exhausted / all_exhausted)")
        return
    missing = [i for i, ds in enumerate(mixture.datasets) if ds.proportion is None]
    for i in missing:
        yield error(("data", "mixture", "datasets", i),
                    "every dataset in a mixture needs a proportion", "proportion-missing")
    if missing:
        return
    total = sum(ds.proportion or 0.0 for ds in mixture.datasets)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        parts = " + ".join(f"{ds.proportion:g}" for ds in mixture.datasets)
        yield error(("data", "mixture", "datasets"),
                    f"mixture proportions sum to {total:g} ({parts}); they must sum to 1",
                    "proportion-sum")


def templates_exclusive(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    for path, ds in datasets(spec):
        if ds.prompt_template is not None and ds.prompt_func is not None:
            yield error(path + ("prompt_func",),
                        "prompt_template and prompt_func are mutually exclusive; give one",
                        "prompt-exclusive")
        if ds.completion_template is not None and ds.completion_func is not None:
            yield error(path + ("completion_func",),
                        "completion_template and completion_func are mutually exclusive; "
                        "give one", "completion-exclusive")
        if ds.format == "completion" and ds.prompt_template is None and ds.prompt_func is None:
            yield error(path + ("format",),
                        "format completion needs prompt_template or prompt_func",
                        "completion-prompt")


def packing_needs_length(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """Packing fills sequences of ``max_seq_len`` tokens: null (no truncation) cannot pack."""
    d = spec.data
    if d.packed and d.max_seq_len is None:
        yield error(("data", "max_seq_len"), "packing fills sequences of max_seq_len tokens; "
                    "null (no truncation) leaves nothing to fill", "packed-length",
                    hint="give data.max_seq_len a number, or set data.packed: false")


def evaluation_data(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    ev = spec.training.evaluation
    d = spec.data
    if ev.strategy != "no" and d.validation is None and d.validation_split_ratio is None:
        yield error(("training", "evaluation", "strategy"),
                    f"evaluation strategy {ev.strategy} needs data.validation or "
                    "data.validation_split_ratio", "eval-data")
    if d.validation is not None and d.validation_split_ratio is not None:
        yield error(("data", "validation_split_ratio"),
                    "give data.validation or data.validation_split_ratio, not both",
                    "validation-both")
    if spec.training.early_stopping is not None and ev.strategy == "no":
        yield error(("training", "early_stopping"),
                    "early stopping needs evaluation (training.evaluation.strategy)",
                    "early-stopping-eval")


def loader_known(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """A file whose name does not tell its format needs ``loader``."""
    from ftspec.spec.catalog.loaders import SUFFIXES, detect, is_folder, suffix_of

    for path, ds in datasets(spec):
        if ds.loader is not None:
            continue
        # a hub repository's id may hold dots (airoboros-3.2): only a path inside it is a file
        location = hub_parts(ds.uri)[1] if scheme(ds.uri) == "hf" else rest(ds.uri)
        if not is_folder(location) and detect(location) is None:
            yield error((*path, "uri"), f"cannot tell the format of a {suffix_of(location)} "
                        "file", "loader-unknown",
                        hint="set loader (json, csv, tsv, parquet, text or arrow); known "
                        "suffixes: " + ", ".join(SUFFIXES))
