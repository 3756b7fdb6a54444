"""(prompt, completion) pairs -> token ids and labels, and the padding collator.

Labels copy the input ids, with the prompt masked (``IGNORE_INDEX``) unless ``train_on_input``.
With a ``response_template`` the split point is the end of the marker's last occurrence in
prompt + completion (completion-only loss as TRL defines it); an example without the marker
keeps no label at all (it adds nothing to the loss), and is counted in ``Features.unmarked``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

IGNORE_INDEX = -100
Feature = dict[str, list[int]]


@dataclass
class Features:
    rows: list[Feature] = field(default_factory=list)
    unmarked: int = 0
    """Examples without the response template (no loss)."""


def tokenize(examples: list[tuple[str, str]], tokenizer: Any, max_len: int,
             train_on_input: bool, response_template: str | None = None) -> Features:
    out = Features()
    bos_text = tokenizer.bos_token or None
    for prompt, completion in examples:
        masked = not train_on_input
        if response_template is not None:
            text = prompt + completion
            at = text.rfind(response_template)
            if at < 0:
                out.unmarked += 1
                prompt, completion, masked = text, "", True
            else:
                cut = at + len(response_template)
                prompt, completion = text[:cut], text[cut:]
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"] if prompt else []
        completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
        has_bos = bos_text is not None and (prompt or completion).startswith(bos_text)
        if tokenizer.bos_token_id is not None and not has_bos:
            prompt_ids = [tokenizer.bos_token_id, *prompt_ids]
        if completion or response_template is None:
            completion_ids = [*completion_ids, tokenizer.eos_token_id]
        prompt_labels = [IGNORE_INDEX] * len(prompt_ids) if masked else list(prompt_ids)
        out.rows.append({"input_ids": (prompt_ids + completion_ids)[:max_len],
                         "labels": (prompt_labels + completion_ids)[:max_len]})
    return out


def pack(rows: list[Feature], max_len: int) -> list[Feature]:
    """Concatenate every example and cut the stream into ``max_len`` pieces (the last may be
    shorter). Examples attend across their boundaries, as in TRL's constant-length packing."""
    ids = [t for r in rows for t in r["input_ids"]]
    labels = [t for r in rows for t in r["labels"]]
    return [{"input_ids": ids[i:i + max_len], "labels": labels[i:i + max_len]}
            for i in range(0, len(ids), max_len)]


def pad_id(tokenizer: Any) -> int:
    return int(next(i for i in (tokenizer.pad_token_id, tokenizer.unk_token_id,
                                tokenizer.eos_token_id) if i is not None))


def collate(batch: list[Feature], pad: int) -> dict[str, torch.Tensor]:
    import torch

    width = max(len(f["input_ids"]) for f in batch)

    def padded(key: str, fill: int) -> torch.Tensor:
        return torch.tensor([f[key] + [fill] * (width - len(f[key])) for f in batch])

    lengths = [len(f["input_ids"]) for f in batch]
    mask = torch.tensor([[1] * n + [0] * (width - n) for n in lengths])
    return {"input_ids": padded("input_ids", pad), "labels": padded("labels", IGNORE_INDEX),
            "attention_mask": mask}
