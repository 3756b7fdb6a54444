"""Chat rows -> token ids and loss masks laid out as torchtune 0.6.1's ``chat_dataset`` lays
them out, with a Hugging Face tokenizer, for TRL's ``SFTTrainer`` (pre-tokenized rows:
``input_ids`` + ``assistant_masks``, which the trainer turns into labels as they are).

Why our own code: torchtune's sentencepiece tokenizers (Llama 2, Mistral) tokenize each piece
of each message apart — the prompt template's tags, the content —, start every turn with BOS
and end every assistant message with EOS (``tokenize_messages_no_special_tokens``); a Jinja
chat template (TRL's ``assistant_only_loss`` path) renders the whole conversation as one text
and tokenizes it at once, which gives other ids at the message boundaries (sentencepiece
marks the start of each piece with a space). No library renders torchtune's layout with a
Hugging Face tokenizer, so this module does, for the named templates torchtune ships:

- ``llama2``: ``Llama2ChatTemplate`` — ``[INST] `` … `` [/INST] `` around user messages, the
  system message inside ``<<SYS>>`` tags at the front of every later user message.
- ``mistral``: ``MistralChatTemplate`` — the same user tags, no system message.
- ``chatml``: ``ChatMLTemplate`` — ``<|im_start|>ROLE\\n`` … ``<|im_end|>\\n`` (plain text for
  a sentencepiece tokenizer, as in torchtune).

Masks follow torchtune's message transforms: every non-assistant message is masked unless
``train_on_input`` (a ``new_system_prompt`` always is), so every assistant turn is trained,
with its EOS; a turn's BOS takes its first message's mask. Sequences are cut to
``max_seq_len`` with the last token replaced by EOS, as torchtune's ``truncate`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Tags = dict[str, tuple[str, str]]
TEMPLATES: dict[str, Tags] = {
    "llama2": {"system": ("<<SYS>>\n", "\n<</SYS>>\n\n"), "user": ("[INST] ", " [/INST] ")},
    "mistral": {"user": ("[INST] ", " [/INST] ")},
    "chatml": {"system": ("<|im_start|>system\n", "<|im_end|>\n"),
               "user": ("<|im_start|>user\n", "<|im_end|>\n"),
               "assistant": ("<|im_start|>assistant\n", "<|im_end|>\n")},
}
SHAREGPT_ROLES = {"system": "system", "human": "user", "gpt": "assistant"}


@dataclass(frozen=True)
class Message:
    role: str
    pieces: tuple[str, ...]
    masked: bool


@dataclass(frozen=True)
class Tokens:
    """One pre-tokenized example: ids and which of them are trained on."""

    input_ids: list[int]
    trained: list[bool]

    def row(self) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids, "assistant_masks": [int(t) for t in self.trained]}


def messages(turns: list[dict[str, Any]], style: str, train_on_input: bool,
             new_system_prompt: str | None, where: str) -> list[Message]:
    """A conversation as torchtune's ShareGPTToMessages / OpenAIToMessages read it."""
    out: list[Message] = []
    if new_system_prompt is not None:
        out.append(Message("system", (new_system_prompt,), True))
    for turn in turns:
        role: Any = turn.get("role")
        content: Any = turn.get("content")
        if style == "sharegpt":
            if turn.get("from") not in SHAREGPT_ROLES:
                raise SystemExit(f"{where}: a ShareGPT turn needs from (system, human, gpt) "
                                 f"and value: {turn}")
            role, content = SHAREGPT_ROLES[turn["from"]], turn.get("value")
        if not isinstance(content, str) or role not in ("system", "user", "assistant"):
            raise SystemExit(f"{where}: a {style} turn needs a system/user/assistant role and "
                             f"text content: {turn}")
        if role == "system" and new_system_prompt is not None:
            continue
        out.append(Message(role, (content,), role != "assistant" and not train_on_input))
    _validate(out, where)
    return out


def _validate(msgs: list[Message], where: str) -> None:
    """torchtune's ``validate_messages``: the conversations its builders accept."""
    if len(msgs) < 2:
        raise SystemExit(f"{where}: a conversation needs at least a user and an assistant turn")
    last = ""
    for i, m in enumerate(msgs):
        if m.role == "system" and i > 0:
            raise SystemExit(f"{where}: a system message must come first")
        if m.role == "assistant" and "user" not in (x.role for x in msgs[:i]):
            raise SystemExit(f"{where}: an assistant turn before the first user turn")
        if m.role == last == "user":
            raise SystemExit(f"{where}: two user turns in a row")
        last = m.role


def apply_template(name: str, msgs: list[Message], where: str) -> list[Message]:
    """The named template's tags as separate pieces around each message's content."""
    tags = TEMPLATES[name]
    out: list[Message] = []
    system: tuple[str, ...] = ()
    for m in msgs:
        if m.role == "system" and name == "mistral":
            raise SystemExit(f"{where}: the mistral template has no system message")
        if m.role == "system" and name == "llama2":  # folded into each later user message
            system = (tags["system"][0], *m.pieces, tags["system"][1])
            continue
        pre, post = tags.get(m.role, ("", ""))
        inner = (*system, *m.pieces) if name == "llama2" and m.role == "user" else m.pieces
        pieces = tuple(p for p in (pre, *inner, post) if p)
        out.append(Message(m.role, pieces, m.masked))
    return out


class PieceEncoder:
    """torchtune's sentencepiece ``encode`` of one piece, through a Hugging Face tokenizer:
    the piece as sentencepiece encodes it alone, or with its leading space trimmed
    (torchtune encodes ``"\\n" + piece`` and drops the newline's ids)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self._newline = self._ids("\n")

    def _ids(self, text: str) -> list[int]:
        return list(self._tok(text, add_special_tokens=False)["input_ids"])

    def encode(self, text: str, trim_leading_whitespace: bool) -> list[int]:
        if not text:
            return []
        if not trim_leading_whitespace:
            text = " " + text  # sentencepiece's dummy prefix, which the HF tokenizer may skip
        ids = self._ids("\n" + text)
        if ids[:len(self._newline)] != self._newline:
            raise SystemExit("the tokenizer does not encode a leading newline on its own; "
                             "torchtune's message layout cannot be reproduced with it")
        return ids[len(self._newline):]


def tokenize(msgs: list[Message], tokenizer: Any, max_seq_len: int | None) -> Tokens:
    """``tokenize_messages_no_special_tokens`` with BOS and EOS."""
    enc = PieceEncoder(tokenizer)
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    ids: list[int] = []
    masked: list[bool] = []
    start, prev_space = True, False
    last = msgs[-1]
    for m in msgs:
        last = m
        if start:
            ids.append(bos)
            masked.append(m.masked)
        trim = not start and not prev_space
        for piece in m.pieces:
            part = enc.encode(piece.rstrip(" "), trim)
            ids += part
            masked += [m.masked] * len(part)
        prev_space = m.pieces[-1].endswith(" ")
        start = m.role == "assistant"
        if start:
            ids.append(eos)
            masked.append(m.masked)
        if max_seq_len is not None and len(ids) >= max_seq_len:
            break
    if max_seq_len is not None:  # torchtune's truncate: cut, and end on EOS
        ids, masked = ids[:max_seq_len], masked[:max_seq_len]
        if ids and ids[-1] != eos:
            ids[-1] = eos
        if masked and masked[-1] != last.masked:
            masked[-1] = last.masked
    return Tokens(ids, [not m for m in masked])
