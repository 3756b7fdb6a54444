"""prepare.json -> the training and evaluation datasets handed to ``SFTTrainer``.

Every row becomes ``prompt`` / ``completion`` text (``render``; chat rows become finished TRL
rows: token ids with assistant masks, or ``messages``); the trainer tokenizes it, adds
EOS, masks the prompt (``completion_only_loss``) and packs. A source with
``train_on_input`` moves its prompt into the completion (same text, so the same tokens, all
trained on); a ``response_template`` moves the split to the end of the marker's last
occurrence (an example without the marker is trained on nothing and counted in the notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ftspec.runtime.hf_sft.mixing import interleave, split_off
from ftspec.runtime.hf_sft.render import Example, render
from ftspec.runtime.hf_sft.sources import Source, read_rows, source_from_json


@dataclass(frozen=True)
class Plan:
    """What prepare.json says (ftspec writes it; see ``targets/accelerate_sft.py``)."""

    train: tuple[Source, ...]
    mixture_strategy: str = "first_exhausted"
    validation: Source | None = None
    validation_split_ratio: float | None = None
    tokenizer: str | None = None
    pad_token: str | None = None
    chat_template: str | None = None
    peft: dict[str, Any] | None = None
    early_stopping: dict[str, Any] | None = None
    stop: dict[str, Any] | None = None
    """``training.stop``: after_seconds and the auto-stop rule (``stop.py``)."""
    torchtune_tokenizer: dict[str, Any] | None = None
    """The torchtune tokenizer section: instruct / alpaca rows are tokenized as torchtune
    does (``torchtune_rows``)."""
    trainable: dict[str, Any] | None = None
    """LoRA+ and layer freezing (``trainable``)."""

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Plan:
        train = tuple(source_from_json(e, f"train[{i}]") for i, e in enumerate(obj["train"]))
        val = obj.get("validation")
        return Plan(
            train=train, mixture_strategy=obj.get("mixture_strategy", "first_exhausted"),
            validation=source_from_json(val, "validation") if val is not None else None,
            validation_split_ratio=obj.get("validation_split_ratio"),
            tokenizer=obj.get("tokenizer"),
            pad_token=obj.get("pad_token"), chat_template=obj.get("chat_template"),
            peft=obj.get("peft"), early_stopping=obj.get("early_stopping"),
            stop=obj.get("stop"),
            torchtune_tokenizer=obj.get("torchtune_tokenizer"), trainable=obj.get("trainable"))


@dataclass
class Data:
    train: Any
    eval: Any
    notes: list[str] = field(default_factory=list)


Tagged = tuple[Example, Source]


def load_examples(plan: Plan, tokenizer: Any = None, seed: int = 42) -> list[Example]:
    """The training examples as (prompt, completion) text, before any validation split."""
    return [example for example, _ in _load_tagged(plan, tokenizer, seed)]


def _load_tagged(plan: Plan, tokenizer: Any, seed: int) -> list[Tagged]:
    parts = [[(e, s) for e in render(read_rows(s), s, tokenizer)] for s in plan.train]
    for s, part in zip(plan.train, parts):
        if not part:
            raise SystemExit(f"{s.source}: no examples")
    if len(parts) == 1:
        return parts[0]
    if plan.mixture_strategy != "concatenate" and any(s.proportion is None for s in plan.train):
        raise SystemExit("a mixture needs a proportion on every source")
    mixed: list[Tagged] = interleave(parts, [float(s.proportion or 0) for s in plan.train],
                                     plan.mixture_strategy, seed)
    return mixed


def build_data(plan: Plan, tokenizer: Any, seed: int) -> Data:
    import datasets

    if plan.torchtune_tokenizer is not None:
        return _tokenized_data(plan, seed)
    tagged = _load_tagged(plan, tokenizer, seed)
    if plan.validation is not None:
        held = [(e, plan.validation) for e in render(read_rows(plan.validation),
                                                     plan.validation, tokenizer)]
    else:
        tagged, held = split_off(tagged, plan.validation_split_ratio or 0.0, seed)
    train, unmarked = _rows(tagged)
    ev, _ = _rows(held)
    shapes = {tuple(sorted(r)) for r in train + ev}
    if len(shapes) > 1:
        raise SystemExit(f"the sources render to different row shapes {sorted(shapes)}: "
                         "chat cannot be mixed with other formats")
    notes = [f"train_examples={len(train)} eval_examples={len(ev)}"]
    if unmarked:
        notes.append(f"warning: {unmarked} training examples lack their response template; "
                     "they add no loss")
    from ftspec.runtime.hf_sft.vision import with_images

    train_ds = with_images(datasets.Dataset.from_list(train))  # the sampler shuffles (or not)
    return Data(train_ds, with_images(datasets.Dataset.from_list(ev)) if ev else None, notes)


def _rows(tagged: list[Tagged]) -> tuple[list[dict[str, Any]], int]:
    rows: list[dict[str, Any]] = []
    unmarked = 0
    for example, src in tagged:
        if isinstance(example, dict):  # chat: a finished TRL row
            rows.append(example)
            continue
        prompt, completion = example
        if src.response_template is not None:
            text = prompt + completion
            at = text.rfind(src.response_template)
            if at < 0:
                unmarked += 1
                rows.append({"prompt": text, "completion": ""})
                continue
            cut = at + len(src.response_template)
            prompt, completion = text[:cut], text[cut:]
        if src.train_on_input:
            prompt, completion = "", prompt + completion
        rows.append({"prompt": prompt, "completion": completion})
    return rows, unmarked


def _tokenized_data(plan: Plan, seed: int) -> Data:
    """Every source tokenized by torchtune's own builder pieces (``torchtune_rows``)."""
    import datasets
    from ftspec.runtime.hf_sft.torchtune_rows import (
        tokenized_rows,
        torchtune_tokenizer,
    )

    assert plan.torchtune_tokenizer is not None
    tokenizer = torchtune_tokenizer(plan.torchtune_tokenizer)
    parts = [tokenized_rows(read_rows(s), s, tokenizer) for s in plan.train]
    for s, part in zip(plan.train, parts):
        if not part:
            raise SystemExit(f"{s.source}: no examples")
    train = parts[0] if len(parts) == 1 else interleave(
        parts, [float(s.proportion or 0) for s in plan.train], plan.mixture_strategy, seed)
    if plan.validation is not None:
        held = tokenized_rows(read_rows(plan.validation), plan.validation, tokenizer)
    else:
        train, held = split_off(train, plan.validation_split_ratio or 0.0, seed)
    notes = [f"train_examples={len(train)} eval_examples={len(held)}",
             "rows tokenized by torchtune's tokenizer and message transform"]
    return Data(datasets.Dataset.from_list(train),
                datasets.Dataset.from_list(held) if held else None, notes)
