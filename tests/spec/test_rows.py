"""The row format in the IR (``ftspec.spec.rows``): which columns each format reads, in which
role, at which spec field, and which tokens its loss counts, derived once for every dataset."""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import RowColumn
from ftspec.spec.model.data import Dataset
from ftspec.spec.rows import dataset_rows, template_fields

from tests.helpers.jobs import make_job


def _columns(**ds: Any) -> list[tuple[str, str, tuple[str | int, ...], str]]:
    rows = dataset_rows(Dataset(uri="hf://org/d", **ds))
    return [(c.name, c.role, c.field, c.value) for c in rows.columns]


def test_each_format_names_its_columns_and_roles() -> None:
    assert _columns(format="alpaca") == [("instruction", "instruction", ("format",), "text"),
                                         ("output", "output", ("format",), "text")]
    assert _columns(format="instruct") == [("input", "input", ("format",), "text"),
                                           ("output", "output", ("format",), "text")]
    assert _columns(format="prompt_completion") == [
        ("prompt", "prompt", ("format",), "text"),
        ("completion", "completion", ("format",), "text")]
    assert _columns(format="chat") == [("conversations", "messages", ("format",), "messages")]
    assert _columns(format="sharegpt", conversation_column="turns") == [
        ("turns", "messages", ("conversation_column",), "messages")]
    assert _columns(format="text", text_field="body") == [
        ("body", "text", ("text_field",), "text")]


def test_column_map_renames_and_templates_add_their_fields() -> None:
    assert _columns(format="alpaca", column_map={"output": "answer"}) == [
        ("instruction", "instruction", ("format",), "text"),
        ("answer", "output", ("column_map", "output"), "text")]
    # a prompt template replaces instruct's own columns with the ones it names, in order
    assert _columns(format="instruct", prompt_template="{q.text} {ctx} {q}") == [
        ("q", "template", ("prompt_template",), "any"),
        ("ctx", "template", ("prompt_template",), "any")]
    assert template_fields("{a") == []  # not a template str.format reads: no columns


def test_the_loss_mask_and_conversation_facts() -> None:
    def rows(**ds: Any) -> tuple[str, bool]:
        r = dataset_rows(Dataset(uri="hf://org/d", **ds))
        return r.loss, r.conversation

    assert rows(format="text") == ("all", False)
    # a response template: the tokens after the marker only (the SFTTrainer seed's text rows)
    assert rows(format="text", response_template="\n### Response:") == ("completion", False)
    assert rows(format="text", response_template="A:", train_on_input=True) == ("all", False)
    assert rows(format="alpaca") == ("all", False)  # alpaca trains on the prompt by default
    assert rows(format="chat") == ("completion", True)
    assert rows(format="chat", train_on_input=True) == ("all", True)
    assert rows(format="instruct", as_chat=True) == ("completion", True)
    assert rows(format="completion", prompt_template="{p}") == ("completion", False)


def test_the_job_carries_every_datasets_rows() -> None:
    job = make_job(data={"train": {"uri": "hf://org/a", "format": "alpaca"},
                         "validation": {"uri": "hf://org/v", "format": "text"}})
    fmt = job.row_format
    assert fmt.formats == ("alpaca",)
    assert [r.path for r in fmt.datasets] == [("data", "train"), ("data", "validation")]
    assert [r.path for r in fmt.training] == [("data", "train")]
    validation = fmt.at(("data", "validation"))
    assert validation is not None and validation.column("text") == "text"
    assert fmt.at(("data", "mixture", "datasets", 0)) is None
    mixed = make_job(data={"train": None, "mixture": {"datasets": [
        {"uri": "hf://org/a", "proportion": 0.5, "format": "chat"},
        {"uri": "hf://org/b", "proportion": 0.5, "format": "text"}]}})
    assert [r.path for r in mixed.row_format.training] == [
        ("data", "mixture", "datasets", 0), ("data", "mixture", "datasets", 1)]
    assert mixed.row_format.training[0].columns == (
        RowColumn("conversations", "messages", ("format",), "messages"),)
