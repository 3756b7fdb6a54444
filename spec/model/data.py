"""``data``: datasets, their formats and preprocessing."""

from __future__ import annotations

from typing import Literal

from ftspec.spec import patterns
from ftspec.spec.catalog.loaders import LoaderName
from ftspec.spec.ir import RowFormatName
from ftspec.spec.model.base import URI_PATTERN, InputIdentity, SpecModel, identity_field
from pydantic import Field

DatasetFormat = RowFormatName
"""One type for the spec and the IR (``ftspec.spec.ir.RowFormat``)."""
FORMAT_TRAINS_ON_INPUT: dict[str, bool] = {"alpaca": True}
"""``train_on_input: null`` means the format's own default: torchtune's ``alpaca_dataset``
trains on the prompt, every other builder (and TRL's completion-only loss) does not."""


class Dataset(SpecModel):
    """One dataset: where it is, its layout, and how rows become training text."""

    uri: str = Field(
        pattern=URI_PATTERN,
        description="hf://org/name, s3://…, pvc://claim/path or file://data.jsonl.",
    )
    format: DatasetFormat = Field(
        default="instruct",
        description="instruct: input/output columns (through column_map); alpaca: "
        "instruction/input/output with the Alpaca prompt (the input section only when the row "
        "has one); chat: conversations; sharegpt: chat in ShareGPT from/value turns; text: raw "
        "text; completion: prompt/completion templates; prompt_completion: the rows' own "
        "prompt/completion columns; multimodal: a conversation column (as chat) plus an image "
        "column (image_field), trained on the final assistant turn (accelerate launcher).",
    )
    split: str = Field(default="train", description="Split to read.")
    identity: InputIdentity = identity_field()
    subset: str | None = Field(default=None, description="Dataset configuration / subset name.")
    loader: LoaderName | None = Field(
        default=None,
        description="The datasets builder that reads the file(s). Detected from the file name "
        "(.json/.jsonl, .csv, .tsv, .parquet, .txt, .arrow, also compressed); a folder or a "
        "whole hub repository is read by the hub's own loading. Give it when the name "
        "cannot tell.",
    )
    num_examples: int | None = Field(
        default=None,
        ge=1,
        description="Rows in the split, when known: gives steps per epoch in `explain`.",
    )
    column_map: dict[str, str] = Field(
        default_factory=dict,
        description="Expected column -> dataset column, e.g. {input: instruction, output: output}.",
    )
    train_on_input: bool | None = Field(
        default=None,
        description="Compute loss on the prompt tokens too. Unset: the format's default "
        "(alpaca: true, as torchtune's alpaca_dataset; every other format: false).",
    )
    new_system_prompt: str | None = Field(
        default=None, description="Replace or add a system prompt on every example."
    )
    as_chat: bool = Field(
        default=False,
        description="instruct: render each row as a conversation — new_system_prompt as the "
        "system message, the input column as the user turn, the output column as the "
        "assistant turn — through the chat template and masked like format: chat (as Oumi "
        "does; torchtune's instruct_dataset always does this).",
    )
    conversation_column: str | None = Field(
        default=None, description="chat: column holding the conversation."
    )
    conversation_style: Literal["sharegpt", "openai"] | None = Field(
        default=None, description="chat: message layout."
    )
    text_field: str | None = Field(default=None, description="text: column with the text.")
    prompt_template: str | None = Field(
        default=None,
        description="Python format string over the row's columns building the prompt, e.g. "
        "'Summarize:\\n{dialogue}\\nSummary:\\n'. Exclusive with prompt_func.",
    )
    prompt_func: str | None = Field(
        default=None,
        pattern=patterns.FUNCTION_REF,
        description="module:function building the prompt from a row. Exclusive with "
        "prompt_template.",
    )
    completion_template: str | None = Field(
        default=None, description="Format string building the completion, e.g. '{summary}'."
    )
    completion_func: str | None = Field(
        default=None,
        pattern=patterns.FUNCTION_REF,
        description="module:function building the completion. Exclusive with "
        "completion_template.",
    )
    response_template: str | None = Field(
        default=None,
        description="Marker after which tokens are trained on (completion-only loss).",
    )
    image_field: str | None = Field(
        default=None,
        description="multimodal: column holding each row's image or list of images (a file "
        "path, a base64 data: URI, or an image of a hub dataset); default `images` (as "
        "fms-hf-tuning's dataset_image_field).",
    )
    image_dir: str | None = Field(
        default=None,
        description="multimodal: folder relative image paths are read from (on the machine "
        "that runs the launcher); default: the data file's folder.",
    )
    image_tag: str | None = Field(
        default=None,
        description="multimodal: placeholder in the user's text where each image goes, e.g. "
        "'<image>'; without it the images precede the first user message.",
    )
    proportion: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Share of this dataset in a mixture; all proportions must sum to 1 "
        "(not given with strategy concatenate).",
    )

    @property
    def trains_on_input(self) -> bool:
        """``train_on_input`` with the format's default applied."""
        if self.train_on_input is not None:
            return self.train_on_input
        return FORMAT_TRAINS_ON_INPUT.get(self.format, False)


class Mixture(SpecModel):
    strategy: Literal["first_exhausted", "all_exhausted", "concatenate"] = Field(
        default="first_exhausted",
        description="By proportion: stop when the first dataset runs out, or when all have "
        "(oversampling). concatenate: every row of every dataset once, no proportions (what "
        "axolotl, LLaMA-Factory and the alignment-handbook do with several datasets).",
    )
    datasets: list[Dataset] = Field(
        min_length=2, description="The datasets mixed; each needs a `proportion` (none "
        "with strategy concatenate).",
    )


class DataSpec(SpecModel):
    train: Dataset | None = Field(
        default=None, description="The training dataset (or give `mixture`)."
    )
    mixture: Mixture | None = Field(
        default=None, description="Several training datasets mixed by proportion."
    )
    validation: Dataset | None = Field(default=None, description="Held-out evaluation data.")
    validation_split_ratio: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Carve validation data out of `train` by this ratio instead.",
    )
    max_seq_len: int | None = Field(
        default=2048, ge=8,
        description="Tokens per sequence (truncate / pad to this); null: no truncation "
        "(torchtune tokenizer.max_seq_len: null, TRL max_length: null), priced at the "
        "model's context.",
    )
    packed: bool = Field(default=False, description="Pack several examples into each sequence.")
    packed_attention: Literal["per_example", "across"] = Field(
        default="per_example",
        description="With `packed`: per_example = each example attends to itself only "
        "(positions restart, block-causal: torchtune's PackedDataset, TRL's padding-free "
        "bfd packing); across = plain causal attention over the whole pack (TRL's wrapped "
        "packing; torchtune cannot).",
    )
    shuffle: bool = Field(default=True, description="Shuffle the training data.")
    num_workers: int = Field(default=0, ge=0, description="Data-loader worker processes.")
