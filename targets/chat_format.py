"""How chat rows become tokens under each launcher: the chat template a spec names, and the
message layout torchtune's tokenizer gives them (which the accelerate entrypoint reproduces).

``model.chat_template`` is one of:

- unset: the tokenizer's own template — for torchtune, its tokenizer builder's default prompt
  template (``llama2_tokenizer``: ``Llama2ChatTemplate``; ``mistral_tokenizer``:
  ``MistralChatTemplate``; Llama 3 / Qwen / Gemma … their own special-token layout). Where the
  accelerate entrypoint reproduces that layout (Llama 2, Mistral) it uses it too, so both
  launchers train on the same tokens; elsewhere TRL renders the Hugging Face tokenizer's Jinja
  ``chat_template`` (and ``accelerate_checks`` refuses it where torchtune could run the model).
- a name in ``NAMED``: torchtune's prompt template class of that name (``tokenizer.
  prompt_template``) and, under accelerate, the same layout tokenized message by message
  (``runtime/hf_sft/chat_tokens.py``).
- inline Jinja (it contains ``{``) or a file / tokenizer folder: TRL renders it
  (``assistant_only_loss``); torchtune 0.6.1 cannot read Jinja.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job

NAMED: dict[str, str] = {
    "llama2": "torchtune.models.llama2.Llama2ChatTemplate",
    "mistral": "torchtune.models.mistral.MistralChatTemplate",
    "chatml": "torchtune.data.ChatMLTemplate",
}
"""Named chat template -> torchtune's prompt template class."""
SENTENCEPIECE_DEFAULTS: dict[str, str] = {
    "torchtune.models.llama2": "llama2",
    "torchtune.models.mistral": "mistral",
}
"""torchtune model folder -> the default prompt template of its sentencepiece tokenizer. Only
these tokenizers lay messages out as plain text pieces (``tokenize_messages_no_special_
tokens``), the layout the accelerate entrypoint reproduces with a Hugging Face tokenizer."""

TemplateKind = Literal["own", "named", "jinja", "file"]


def template_kind(value: str | None) -> TemplateKind:
    if value is None:
        return "own"
    if value in NAMED:
        return "named"
    return "jinja" if "{" in value else "file"


def torchtune_layout(job: Job) -> str | None:
    """The named layout torchtune's chat tokens follow for this job, when the accelerate
    entrypoint can reproduce it (None: torchtune cannot run the model's chat, or lays it out
    with special tokens the entrypoint does not reproduce)."""
    value = job.spec.model.chat_template
    kind = template_kind(value)
    if kind in ("jinja", "file"):
        return None
    default = SENTENCEPIECE_DEFAULTS.get(job.model.torchtune_builder or "")
    if default is None:
        return None
    return value if kind == "named" else default


def torchtune_runs_chat(job: Job) -> bool:
    """torchtune has a tokenizer for this model and a layout for its template."""
    return job.model.torchtune_builder is not None \
        and template_kind(job.spec.model.chat_template) in ("own", "named")


def mistral_layout(job: Job) -> bool:
    """Chat rows are laid out by torchtune's ``MistralChatTemplate`` (named, or the default
    of the Mistral tokenizer), on both launchers."""
    value = job.spec.model.chat_template
    if value is None:
        return SENTENCEPIECE_DEFAULTS.get(job.model.torchtune_builder or "") == "mistral"
    return value == "mistral"


def check_system_prompt(job: Job, findings: Findings) -> Iterator[Diagnostic]:
    """A system prompt the spec gives where the Mistral layout has none: torchtune's
    template raises on the first row ("System prompts are not supported"), and the
    accelerate entrypoint lays rows out the same way. (System messages inside the data can
    only be found when the rows are read.)"""
    if not mistral_layout(job):
        return
    from ftspec.spec.rules.data import datasets

    for path, ds in datasets(job.spec):
        if ds.new_system_prompt is not None:
            yield findings.error((*path, "new_system_prompt"), "the Mistral chat layout has "
                                 "no system message (torchtune's MistralChatTemplate refuses "
                                 "one at the first row)", "mistral-system",
                                 hint="remove new_system_prompt, or use chat_template: "
                                 "llama2 (which places it inside the first [INST])")
