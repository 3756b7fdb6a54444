"""The training datasets a TRL config names: TRL's ``dataset_name`` and the alignment-handbook's
two mixture keys, as one list of :class:`Source` rows.

The handbook (``src/alignment/data.py`` and ``configs.py`` at huggingface/alignment-handbook
925acdfe, July 2025) reads ``dataset_mixture: {datasets: [{id, config, split, columns,
weight}], seed, test_split_size}``: each dataset keeps ``weight`` x its rows (weight 1.0
when unset), the parts are concatenated and shuffled with ``seed``, and ``test_split_size``
(a ratio, or a row count) is carved out of the concatenation for evaluation. Its older
recipes say ``dataset_mixer: {name: fraction}`` with ``dataset_splits`` / ``dataset_configs``
(the same subsample-and-concatenate). The spec mixes by proportion, so several datasets
become ``data.mixture`` with the weights normalised to sum to 1 and a warning at the key: the
shares equal the handbook's only when the datasets have equal row counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.compiler.importers.trl_reader import Reader
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, SpecError

MIXTURE = "dataset_mixture"
MIXER = "dataset_mixer"
CHAT_COLUMN = "messages"


@dataclass(frozen=True)
class Source:
    """One training dataset as the source names it."""

    name: str
    split: str
    subset: str | None
    weight: float | None
    """The handbook's fraction of rows kept; None: TRL's single ``dataset_name``."""
    origin: str
    columns: tuple[str, ...] | None = None


def bad_mixture(draft: SpecDraft, at: KeyPath, summary: str) -> SpecError:
    return SpecError([Diagnostic(
        Severity.ERROR, summary, path=at, span=draft.source.span_of(at, key=True),
        hint="the alignment-handbook reads dataset_mixture: {datasets: [{id, config, split, "
        "columns, weight}], seed, test_split_size}", code="import.bad-value")])


def mixture_sources(r: Reader) -> list[Source]:
    """``dataset_mixture``'s datasets, each located at its own entry; raises a located
    :class:`SpecError` for a shape the handbook's own parser refuses."""
    d = r.draft
    mix = r.value(MIXTURE)
    if not isinstance(mix, dict) or not isinstance(mix.get("datasets"), list) \
            or not mix["datasets"]:
        raise bad_mixture(d, (MIXTURE,), "dataset_mixture needs a non-empty `datasets` list")
    out: list[Source] = []
    for i, entry in enumerate(mix["datasets"]):
        at: KeyPath = (MIXTURE, "datasets", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise bad_mixture(d, at, f"dataset_mixture.datasets[{i}] has no `id` (the "
                              "dataset's hub name or folder)")
        weight = entry.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight <= 0:
            raise bad_mixture(d, at + ("weight",), f"dataset_mixture.datasets[{i}].weight "
                              f"{weight!r} is not a positive number")
        columns = entry.get("columns")
        out.append(Source(entry["id"], str(entry.get("split", "train")), entry.get("config"),
                          float(weight), d.origin_of(at + ("id",)),
                          tuple(str(c) for c in columns) if isinstance(columns, list)
                          else None))
    return out


def mixer_sources(r: Reader, train_split: str, subset: Any) -> list[Source]:
    """The older ``dataset_mixer: {name: fraction}`` (``dataset_configs`` per dataset)."""
    mixer = r.value(MIXER)
    configs = r.value("dataset_configs")
    at = r.origin(MIXER)
    out = []
    for i, (name, frac) in enumerate(mixer.items()):
        sub = configs[i] if isinstance(configs, list) and i < len(configs) else subset
        out.append(Source(str(name), train_split, sub if isinstance(sub, str) else None,
                          float(frac), at))
    return out


def mixture_validation(r: Reader, evaluates: bool) -> bool:
    """``dataset_mixture.test_split_size`` as ``data.validation_split_ratio``; a row count
    (which the spec cannot say) is a warning, and evaluation is then off. Returns whether the
    source evaluates on data the spec names."""
    d = r.draft
    mix = r.value(MIXTURE)
    size = mix.get("test_split_size") if isinstance(mix, dict) else None
    at: KeyPath = (MIXTURE, "test_split_size")
    if isinstance(size, float) and 0 < size < 1:
        d.put(("data", "validation_split_ratio"), size, d.origin_of(at))
        return True
    if size is not None:
        d.warn(at, f"test_split_size {size} holds out {size} rows of the mixture for "
               "evaluation: data.validation_split_ratio takes a ratio; imported without "
               "evaluation, so those rows are trained on too (set data.validation_split_ratio "
               "to their share)")
    elif evaluates:
        d.warn((MIXTURE,), "the mixture has no test_split_size: the handbook then has no test "
               "split to evaluate on; imported without evaluation")
    return False


def mixture_seed(r: Reader) -> None:
    """The handbook shuffles the concatenation with ``dataset_mixture.seed`` (default 0);
    the spec shuffles with ``training.seed``."""
    mix = r.value(MIXTURE)
    seed = mix.get("seed", 0) if isinstance(mix, dict) else 0
    if seed != r.value("seed", r.sft):
        r.draft.warn((MIXTURE, "seed") if isinstance(mix, dict) and "seed" in mix
                     else (MIXTURE,), f"dataset_mixture.seed {seed} shuffles the rows; the "
                     "spec shuffles with training.seed: the row order differs")


def warn_shares(d: SpecDraft, key: str, sources: list[Source]) -> None:
    d.warn((key,), f"{len(sources)} datasets: the handbook keeps weight x rows of each and "
           "concatenates them; imported as a mixture with the weights normalised to "
           "proportions, equal to the handbook's shares only when the datasets have equal "
           "row counts: set each proportion to its share of the rows")


def extra_columns(d: SpecDraft, sources: list[Source]) -> None:
    """Columns a mixture keeps beside the conversation (``chat_template_kwargs``): the spec
    renders ``messages`` only."""
    for i, src in enumerate(sources):
        extra = [c for c in src.columns or () if c != CHAT_COLUMN]
        if extra:
            d.warn((MIXTURE, "datasets", i, "columns"), f"columns {', '.join(extra)}: the "
                   "spec renders the messages column only (per-row chat template arguments "
                   "are not passed)")
            return
