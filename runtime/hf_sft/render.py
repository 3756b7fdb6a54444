"""Rows -> (prompt, completion) text pairs, by the source's format.

- completion / prompt_completion: ``prompt_template`` / ``completion_template``
  (``str.format`` placeholders read through ``column_map``) or ``prompt_func`` /
  ``completion_func`` (``module:function`` taking the row).
- instruct / alpaca, for a model torchtune has no tokenizer for (else they are tokenized by
  torchtune's own pieces: ``torchtune_rows``): ``{input}`` / ``{output}``, or the Alpaca
  prompt (``alpaca``) and the output.
- text: the prompt is empty, the completion is the ``text_field`` column.
- multimodal: a chat row with images becomes TRL's conversational prompt / completion row
  with ``images`` (``vision``).
- chat: the conversation column (OpenAI ``role``/``content`` or ShareGPT ``from``/``value``)
  becomes a finished TRL row, trained on every assistant turn: with a ``chat_layout``,
  ``input_ids`` + ``assistant_masks`` laid out as torchtune lays them out (``chat_tokens``);
  without, a ``messages`` row that TRL renders with the chat template and masks itself
  (``assistant_only_loss``, which needs ``{% generation %}`` markers in the template or one
  TRL knows how to patch).

``new_system_prompt`` is the chat system message, or a line before the prompt otherwise.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ftspec.runtime.hf_sft.sources import Source

Example = tuple[str, str] | dict[str, Any]
"""(prompt, completion) text, or a finished TRL row (chat)."""
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant",
                  "assistant": "assistant", "system": "system"}


def render(rows: list[tuple[str, dict[str, Any]]], src: Source,
           tokenizer: Any = None) -> list[Example]:
    if src.format == "text":
        return [(_system_line(src), str(_column(row, src.text_field, where)))
                for where, row in rows]
    if src.format == "multimodal":
        from ftspec.runtime.hf_sft.vision import vision_row

        if tokenizer is not None and not getattr(tokenizer, "chat_template", None):
            raise SystemExit(f"{src.source}: multimodal rows need a processor with a chat "
                             "template (set model.chat_template)")
        return [vision_row(row, src, where) for where, row in rows]
    if src.format == "chat" or src.as_chat:
        return [_chat(row, src, tokenizer, where) for where, row in rows]
    if src.format == "alpaca":
        from ftspec.runtime.hf_sft.alpaca import alpaca_example

        return [alpaca_example(row, src.column_map, where) for where, row in rows]
    prompt = _builder(src.prompt_func, src.prompt_template, src, "prompt")
    completion = _builder(src.completion_func, src.completion_template, src, "completion")
    return [(_system_line(src) + prompt(row, where), completion(row, where))
            for where, row in rows]


def load_function(ref: str) -> Callable[[dict[str, Any]], Any]:
    module, _, name = ref.partition(":")
    try:
        func = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise SystemExit(f"cannot load {ref!r}: {err}") from None
    if not callable(func):
        raise SystemExit(f"{ref!r} is not callable")
    return func  # type: ignore[no-any-return]


def _builder(func_ref: str | None, template: str | None, src: Source,
             part: str) -> Callable[[dict[str, Any], str], str]:
    if func_ref is not None:
        func = load_function(func_ref)
        return lambda row, where: str(func(row))
    if template is None:
        if src.format != "instruct":
            raise SystemExit(f"{src.source}: completion data needs a {part}_template "
                             f"or {part}_func")
        template = "{input}" if part == "prompt" else "{output}"
    fmt = template
    return lambda row, where: fmt.format_map(_Fields(row, src.column_map, where))


def _system_line(src: Source) -> str:
    return f"{src.new_system_prompt}\n\n" if src.new_system_prompt else ""


def _column(row: dict[str, Any], column: str, where: str) -> Any:
    if column not in row:
        raise SystemExit(f"{where}: no column {column!r} (columns: {sorted(row)})")
    return not_null(row[column], column, where)


def not_null(value: Any, column: str, where: str) -> Any:
    """``value``, refused when null: ``str(None)`` would train the text "None" (torchtune
    fails on such a row; the two launchers read the same rows alike)."""
    if value is None:
        raise SystemExit(f"{where}: column {column!r} is null (`ftspec plan --check-data` "
                         "lists every such row)")
    return value


class _Fields(dict[str, str]):
    """Template lookup through the column map, with an error that names the row."""

    def __init__(self, row: dict[str, Any], column_map: dict[str, str], where: str) -> None:
        super().__init__()
        self._row, self._map, self._where = row, column_map, where

    def __missing__(self, key: str) -> str:
        column = self._map.get(key, key)
        if column not in self._row:
            raise SystemExit(f"{self._where}: template field {key!r} reads column {column!r}, "
                             f"which the row lacks (columns: {sorted(self._row)})")
        return str(not_null(self._row[column], column, self._where))


def messages_of(row: dict[str, Any], src: Source, where: str) -> list[dict[str, Any]]:
    """The row's conversation as role/content messages, with the system prompt applied
    (content is text, or kept as TRL's list of typed blocks where the row has one)."""
    raw = _turns(row, src, where)
    messages = []
    for turn in raw:
        if "role" in turn:
            messages.append({"role": str(turn["role"]), "content": _content(turn["content"])})
        elif turn.get("from") in SHAREGPT_ROLES:
            messages.append({"role": SHAREGPT_ROLES[turn["from"]],
                             "content": _content(turn["value"])})
        else:
            raise SystemExit(f"{where}: a turn needs role/content or from/value: {turn}")
    if src.new_system_prompt is not None:
        messages = [m for m in messages if m["role"] != "system"]
        messages.insert(0, {"role": "system", "content": src.new_system_prompt})
    if not messages or messages[-1]["role"] != "assistant":
        raise SystemExit(f"{where}: the conversation must end with an assistant turn")
    return messages


def _content(value: Any) -> Any:
    return value if isinstance(value, list) else str(value)


def _chat(row: dict[str, Any], src: Source, tokenizer: Any, where: str) -> Example:
    if src.chat_layout is not None:
        from ftspec.runtime.hf_sft import chat_tokens

        style = "openai" if src.as_chat else src.conversation_style or "sharegpt"
        msgs = chat_tokens.messages(_turns(row, src, where), style, src.train_on_input,
                                    src.new_system_prompt, where)
        laid = chat_tokens.apply_template(src.chat_layout, msgs, where)
        return chat_tokens.tokenize(laid, tokenizer, src.max_seq_len).row()
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise SystemExit(f"{where}: chat data needs a tokenizer with a chat template "
                         "(set model.chat_template)")
    return {"messages": messages_of(row, src, where)}


def _turns(row: dict[str, Any], src: Source, where: str) -> Any:
    if not src.as_chat:
        return _column(row, src.column_map.get(src.conversation_column,
                                               src.conversation_column), where)
    # instruct rows as torchtune's InputOutputToMessages reads them
    return [{"role": "user", "content": _column(row, src.column_map.get("input", "input"),
                                                where)},
            {"role": "assistant", "content": _column(row, src.column_map.get("output", "output"),
                                                     where)}]
