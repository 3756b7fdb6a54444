"""Row formats, derived once: which columns each dataset's format reads, in which role, and
which tokens its loss counts (``ftspec.spec.ir.RowFormat``, built into every Job).

Launchers, the local preflight and ``plan --check-data`` read these facts from the Job
instead of each spelling out what ``alpaca`` or ``chat`` rows hold.
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

from ftspec.spec.ir import ColumnRole, DatasetRows, RowColumn, RowFormat

if TYPE_CHECKING:
    from ftspec.spec.model import FineTuneSpec
    from ftspec.spec.model.data import Dataset

CONVERSATION_COLUMN = "conversations"
"""The messages column of chat / sharegpt rows when ``conversation_column`` is unset
(torchtune's default, a ShareGPT ``conversations`` column)."""
TEXT_COLUMN = "text"
"""The column of text rows when ``text_field`` is unset."""
FORMAT_COLUMNS: dict[str, tuple[ColumnRole, ...]] = {
    "alpaca": ("instruction", "output"),
    "instruct": ("input", "output"),
    "prompt_completion": ("prompt", "completion"),
}
"""Formats whose columns are named by their role (renamed by ``column_map``)."""
CONVERSATION_FORMATS = ("chat", "sharegpt")
TEMPLATES = ("prompt_template", "completion_template")


def template_fields(template: str | None) -> list[str]:
    """The row columns a ``str.format`` template names, in order (``{a.b}`` names ``a``)."""
    if not template:
        return []
    try:
        names = [name.split(".")[0].split("[")[0]
                 for _, name, _, _ in string.Formatter().parse(template) if name]
    except ValueError:
        return []
    return list(dict.fromkeys(names))


def _columns(ds: Dataset) -> tuple[RowColumn, ...]:
    out: dict[str, RowColumn] = {}
    roles = FORMAT_COLUMNS.get(ds.format, ())
    if ds.format == "instruct" and (ds.prompt_template or ds.prompt_func):
        roles = ()  # the template names the columns
    for role in roles:
        if role in ds.column_map:
            name = ds.column_map[role]
            out[name] = RowColumn(name, role, ("column_map", role), "text")
        else:
            out[role] = RowColumn(role, role, ("format",), "text")
    if ds.format in CONVERSATION_FORMATS:
        name = ds.conversation_column or CONVERSATION_COLUMN
        field = "conversation_column" if ds.conversation_column else "format"
        out[name] = RowColumn(name, "messages", (field,), "messages")
    elif ds.format == "text":
        name = ds.text_field or TEXT_COLUMN
        out[name] = RowColumn(name, "text", ("text_field",) if ds.text_field else ("format",),
                              "text")
    for key in TEMPLATES:
        for name in template_fields(getattr(ds, key)):
            out.setdefault(name, RowColumn(name, "template", (key,), "any"))
    return tuple(out.values())


def dataset_rows(ds: Dataset, path: tuple[str | int, ...] = ()) -> DatasetRows:
    """What the rows of ``ds`` (at ``path`` in the spec) must hold for its format."""
    return DatasetRows(
        path=path, format=ds.format, columns=_columns(ds),
        # text rows train every token unless a response template marks where the completion
        # starts (then the tokens after it only, as fms-hf-tuning's --response_template)
        loss="all" if (ds.format == "text" and ds.response_template is None)
        or ds.trains_on_input else "completion",
        conversation=ds.format in CONVERSATION_FORMATS
        or (ds.format == "instruct" and ds.as_chat))


def row_format(spec: FineTuneSpec) -> RowFormat:
    """The Job's ``row_format``: the training datasets' formats (``data.train``, else each
    mixture dataset's) and every dataset's rows (``spec.rules.data.datasets``' order)."""
    from ftspec.spec.rules.data import datasets

    d = spec.data
    training = [d.train] if d.train is not None else \
        list(d.mixture.datasets) if d.mixture is not None else []
    return RowFormat(tuple(ds.format for ds in training),
                     tuple(dataset_rows(ds, path) for path, ds in datasets(spec)))
