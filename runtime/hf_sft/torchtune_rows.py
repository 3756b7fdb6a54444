"""instruct / alpaca rows -> token ids and loss masks exactly as torchtune builds them.

torchtune's ``instruct_dataset`` and ``alpaca_dataset`` turn a row into user / assistant
messages and tokenize each message apart through the model's torchtune tokenizer, which
applies its prompt template (llama2: ``[INST] … [/INST]``) or role headers (llama3) and
strips / trims whitespace per message. Rendering the same text and letting TRL tokenize it at
once gives other ids, so this module calls torchtune's own pieces — the message transform
(``AlpacaToMessages`` / ``InputOutputToMessages``), the tokenizer the torchtune target would
configure (``prepare.json``'s ``torchtune_tokenizer``) and ``SFTTransform`` — and hands TRL
pre-tokenized rows: ``input_ids`` plus ``completion_mask`` (1 where torchtune computes the
loss). ``SFTTrainer`` then pads, packs and trains on them unchanged
(``completion_only_loss: true`` in ``sft.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.runtime.hf_sft.sources import Source


def torchtune_tokenizer(entry: dict[str, Any]) -> Any:
    """Instantiate the torchtune tokenizer from prepare.json's ``torchtune_tokenizer``: its
    config ``section`` plus ``model_files`` relative to ``model`` (a folder or a hub id)."""
    section = dict(entry["section"])
    model = str(entry.get("model", ""))
    for key, rel in dict(entry.get("model_files", {})).items():
        if Path(model).is_dir():
            section[key] = str(Path(model) / rel)
        else:
            from huggingface_hub import hf_hub_download

            section[key] = hf_hub_download(model, rel, revision=entry.get("revision"))
    try:
        from omegaconf import OmegaConf
        from torchtune import config
    except ImportError:
        raise SystemExit("instruct / alpaca data on the accelerate launcher is tokenized by "
                         "torchtune's own tokenizer, as under launcher: torchtune: install "
                         "it (pip install 'ftspec[torchtune]')") from None
    return config.instantiate(OmegaConf.create(section))


def tokenized_rows(rows: list[tuple[str, dict[str, Any]]], src: Source,
                   tokenizer: Any) -> list[dict[str, list[int]]]:
    """``input_ids`` / ``completion_mask`` per row, as torchtune's builder for ``src.format``."""
    from torchtune.data import AlpacaToMessages, InputOutputToMessages
    from torchtune.datasets._sft import SFTTransform

    column_map = dict(src.column_map) or None
    message_transform: Any
    if src.format == "alpaca":
        message_transform = AlpacaToMessages(train_on_input=src.train_on_input,
                                             column_map=column_map)
    elif src.format == "instruct":
        message_transform = InputOutputToMessages(
            train_on_input=src.train_on_input, column_map=column_map,
            new_system_prompt=src.new_system_prompt)
    else:
        raise SystemExit(f"{src.source}: format {src.format} is not tokenized by torchtune")
    transform = SFTTransform(message_transform=message_transform, model_transform=tokenizer)
    out = []
    for where, row in rows:
        try:
            sample = transform(dict(row))
        except (KeyError, ValueError) as err:
            raise SystemExit(f"{where}: {src.format} row: {err}") from None
        out.append({"input_ids": [int(t) for t in sample["tokens"]],
                    "completion_mask": [0 if masked else 1 for masked in sample["mask"]]})
    return out
