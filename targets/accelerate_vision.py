"""Vision-language SFT on the accelerate launcher: ``format: multimodal`` data.

The rows are conversations (``conversation_column``, OpenAI role/content or ShareGPT
from/value turns) with an image column (``image_field``, default ``images``). ftspec's
entrypoint turns each into TRL's conversational prompt / completion row with ``images``
(``runtime/hf_sft/vision.py``): the prompt is every turn before the last, the completion
the final assistant turn, images go where ``image_tag`` stands in the user's text or before
the first user message. TRL's ``SFTTrainer`` then loads the model's processor and its
``DataCollatorForVisionLanguageModeling`` renders the chat template, expands each image into
the processor's image tokens, and masks the prompt (``completion_only_loss``).

What TRL refuses or would get wrong is refused here at the field: packing and padding-free
batches (TRL raises on vision data), a causal-LM auto class for a vision model, and mixing
multimodal with text datasets. ``max_seq_len`` must hold the image tokens: TRL truncates
after the expansion, so a cut image fails the step ("Image features and image tokens do not
match"). ``probe`` checks it when compiling where the model is a local folder whose
``config.json`` declares the image tokens per image (``image_seq_length``, LLaVA's and
PaliGemma's key; ``mm_tokens_per_image``, Gemma 3's); the entrypoint checks every row
against the processor's own count before training (models whose count depends on the image
size are checked there only).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job

_FINDINGS = Findings("target.accelerate")
IMAGE_TOKEN_KEYS = ("image_seq_length", "mm_tokens_per_image")
"""config.json keys (top level) that state the image tokens one image becomes."""


def multimodal(job: Job) -> bool:
    return any(rows.format == "multimodal" for rows in job.row_format.datasets)


def check_vision(job: Job) -> Iterator[Diagnostic]:
    from ftspec.spec.rules.data import datasets

    found = list(datasets(job.spec))
    vision = [(path, ds) for path, ds in found if ds.format == "multimodal"]
    if not vision:
        return
    spec = job.spec
    if spec.model.auto_class != "AutoModelForVision2Seq":
        yield _FINDINGS.error(("model", "auto_class"), "multimodal data trains a "
                              "vision-language model: TRL loads its processor and image "
                              "collator", "vision-model",
                              hint="set model.auto_class: AutoModelForVision2Seq")
    for other, ds in found:
        if ds.format != "multimodal":
            yield _FINDINGS.error((*other, "format"), f"{ds.format} rows cannot share a run "
                                  "with multimodal rows: TRL's vision collator takes one row "
                                  "shape", "vision-mixed", hint="use format: multimodal for "
                                  "every dataset")
    if spec.data.packed:
        yield _FINDINGS.error(("data", "packed"), "TRL's SFTTrainer does not pack vision "
                              "data (each row's images go with its own tokens)",
                              "vision-packed", hint="set data.packed: false")
    if spec.method.kind in ("prompt_tuning", "ia3"):
        yield _FINDINGS.error(("method", "kind"), f"{spec.method.kind} is set up for causal "
                              "language models (task_type CAUSAL_LM); the vision path trains "
                              "full, LoRA, DoRA or QLoRA", "vision-method",
                              hint="use method.kind: lora or full")


def image_tokens(job: Job) -> tuple[int, str] | None:
    """Image tokens per image from a local model folder's config.json, with the key read."""
    from pathlib import Path

    from ftspec.targets.paths import local_path

    uri = job.spec.model.uri
    if not uri.startswith("file://"):
        return None
    config = Path(local_path(uri)) / "config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no folder here (yet): the entrypoint checks every row
    for key in IMAGE_TOKEN_KEYS:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"{config}: {key}"
    return None


def probe(job: Job) -> list[Diagnostic]:
    """``data.max_seq_len`` against one image's tokens (compile time, local models)."""
    if not multimodal(job) or job.max_seq_len is None:  # called by the accelerate launcher
        return []
    found = image_tokens(job)
    if found is None:
        return []
    count, where = found
    if job.max_seq_len > count:
        return []
    return [_FINDINGS.error(("data", "max_seq_len"), f"max_seq_len {job.max_seq_len} cannot "
                            f"hold one image: the model turns each image into {count} image "
                            f"tokens ({where}), and truncating them fails the training step",
                            "vision-max-seq-len", hint=f"raise data.max_seq_len above {count} "
                            "plus the longest row's text and images")]
