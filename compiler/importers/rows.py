"""Dataset layouts other tools name (Alpaca, ShareGPT, OpenAI messages, plain text) as spec
``data`` entries, in one place for the axolotl and LLaMA-Factory importers.

``alpaca`` is the spec's Alpaca format: the Alpaca prompt (axolotl's ``type: alpaca``
renders the same text). LLaMA-Factory renders Alpaca rows as one chat turn through its own
template instead, which no spec format says: those rows are written as ``format: instruct``
(the user / assistant turn through the tokenizer's template, where torchtune has a tokenizer
for the model) or else ``format: prompt_completion``, with ``instruction`` as the prompt
column; the caller warns that the ``input`` column and the template are not rendered.
"""

from __future__ import annotations

from typing import Any

ALPACA_AS_CHAT_WARNING = ("Alpaca rows: imported as format {format} with instruction as the "
                          "prompt; the input column and {tool}'s chat template are not "
                          "rendered")


def alpaca(uri: str) -> dict[str, Any]:
    return {"uri": uri, "format": "alpaca"}


def alpaca_as_chat_turn(uri: str, family: str | None) -> dict[str, Any]:
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    fam = MODEL_FAMILIES.get(family or "")
    if fam is not None and fam.torchtune is not None:
        return {"uri": uri, "format": "instruct",
                "column_map": {"input": "instruction", "output": "output"}}
    return {"uri": uri, "format": "prompt_completion",
            "column_map": {"prompt": "instruction", "completion": "output"}}


def chat(uri: str, column: str, style: str) -> dict[str, Any]:
    """``style`` sharegpt: the spec's sharegpt format; openai: chat in role/content."""
    if style == "sharegpt":
        return {"uri": uri, "format": "sharegpt", "conversation_column": column}
    return {"uri": uri, "format": "chat", "conversation_column": column,
            "conversation_style": style}


def text(uri: str, field: str = "text") -> dict[str, Any]:
    return {"uri": uri, "format": "text", "text_field": field}
