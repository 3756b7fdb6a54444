"""Settings that have no effect because of a sibling setting (a warning at the setting).

Each entry: the field, the condition under which it is inert, and why. A field left at its
default never warns; the same table serves every target, since it is about the spec itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.base import SpecModel
from ftspec.spec.rules._diag import warning

_DATASET_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("as_chat", ("instruct",)),
    ("conversation_column", ("chat", "sharegpt", "multimodal")),
    ("conversation_style", ("chat", "multimodal")),
    ("text_field", ("text",)),
    ("image_field", ("multimodal",)),
    ("image_dir", ("multimodal",)),
    ("image_tag", ("multimodal",)),
)
"""Dataset field -> the formats that read it."""

Inert = tuple[KeyPath, Callable[[FineTuneSpec], bool], str]

_INERT: tuple[Inert, ...] = (
    (("training", "optimizer", "momentum"),
     lambda s: s.training.optimizer.name not in ("sgd", "rmsprop"),
     "momentum is read by sgd and rmsprop only"),
    (("training", "optimizer", "fused"),
     lambda s: s.training.optimizer.name not in ("adamw", "adam"),
     "fused kernels exist for adamw and adam only"),
    (("training", "scheduler", "num_cycles"),
     lambda s: s.training.scheduler.name not in ("cosine", "cosine_with_restarts"),
     "num_cycles is read by the cosine schedules only"),
    (("training", "scheduler", "min_lr_ratio"),
     lambda s: s.training.scheduler.name != "cosine",
     "min_lr_ratio is read by the cosine schedule only"),
    (("training", "evaluation", "steps"),
     lambda s: s.training.evaluation.strategy != "steps",
     "evaluation.steps is read with evaluation.strategy: steps only"),
    (("training", "evaluation", "batch_size"),
     lambda s: s.training.evaluation.strategy == "no", "evaluation is off (strategy: no)"),
    (("training", "checkpointing", "steps"),
     lambda s: s.training.checkpointing.strategy != "steps",
     "checkpointing.steps is read with checkpointing.strategy: steps only"),
    (("data", "packed_attention"), lambda s: not s.data.packed,
     "packed_attention is read with data.packed: true only"),
    (("training", "logging", "steps"),
     lambda s: s.training.logging.strategy != "steps",
     "logging.steps is read with logging.strategy: steps only"),
    (("method", "prompt_tuning", "init_text"),
     lambda s: s.method.prompt_tuning is not None and s.method.prompt_tuning.init != "text",
     "init_text is read with prompt_tuning.init: text only"),
    (("distributed", "fsdp", "min_num_params"),
     lambda s: s.distributed.fsdp is not None and s.distributed.fsdp.auto_wrap != "size",
     "min_num_params is read with fsdp.auto_wrap: size only"),
    (("distributed", "fsdp", "transformer_layer_cls"),
     lambda s: s.distributed.fsdp is not None
     and s.distributed.fsdp.auto_wrap != "transformer",
     "transformer_layer_cls is read with fsdp.auto_wrap: transformer only"),
    (("distributed", "deepspeed", "zero3_init"),
     lambda s: s.distributed.deepspeed is not None and s.distributed.deepspeed.stage != 3,
     "zero3_init is read with ZeRO stage 3 only"),
)


def _off_default(model: SpecModel, key: str) -> bool:
    info = type(model).model_fields[key]
    return bool(getattr(model, key) != info.get_default(call_default_factory=True))


def _at(spec: FineTuneSpec, path: KeyPath) -> Any:
    obj: Any = spec
    for key in path[:-1]:
        obj = getattr(obj, str(key), None)
        if obj is None:
            return None
    return obj


def inert_settings(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    for path, inert, why in _INERT:
        parent = _at(spec, path)
        if isinstance(parent, SpecModel) and _off_default(parent, str(path[-1])) \
                and inert(spec):
            yield warning(path, f"{'.'.join(map(str, path))} has no effect: {why}", "inert",
                          hint="remove it")
    from ftspec.spec.rules.data import datasets

    for where, ds in datasets(spec):
        for key, formats in _DATASET_FIELDS:
            if ds.format not in formats and _off_default(ds, key):
                yield warning((*where, key), f"{key} has no effect on a {ds.format} dataset: "
                              f"it is read for format {' / '.join(formats)} only", "inert",
                              hint="remove it, or set the format")
