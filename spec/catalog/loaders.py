"""Dataset loaders: which Hugging Face ``datasets`` builder reads a file, in one place.

A dataset URI that names a file is read by the builder its suffix says (``.jsonl.gz`` is
JSON: ``datasets`` decompresses by extension). A URI without a suffix is a folder or a
whole Hub repository: ``datasets`` infers the builder from the files inside (and from the
repository card's configs), which is the Hub's own loading, so no loader is named. A
suffix outside the table needs ``loader:`` in the spec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

LoaderName = Literal["json", "csv", "tsv", "parquet", "text", "arrow"]


@dataclass(frozen=True)
class Loader:
    builder: str
    """The ``datasets`` packaged builder (``load_dataset``'s first argument)."""
    kwargs: dict[str, str] = field(default_factory=dict)
    """Extra ``load_dataset`` keyword arguments."""


LOADERS: dict[str, Loader] = {
    "json": Loader("json"),
    "csv": Loader("csv"),
    "tsv": Loader("csv", {"delimiter": "\t"}),
    "parquet": Loader("parquet"),
    "text": Loader("text"),
    "arrow": Loader("arrow"),
}
SUFFIXES: dict[str, str] = {
    ".json": "json", ".jsonl": "json", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet",
    ".txt": "text", ".arrow": "arrow",
}
COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")
_SUFFIX = re.compile(r"(\.[A-Za-z0-9]+)$")


def suffix_of(path: str) -> str | None:
    """The data suffix of a file path, compression stripped (``x.csv.gz`` -> ``.csv``)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    for comp in COMPRESSION:
        if name.lower().endswith(comp):
            name = name[: -len(comp)]
            break
    match = _SUFFIX.search(name)
    return match.group(1).lower() if match else None


def detect(path: str) -> str | None:
    """The loader a file's name implies; None for a folder/repository or an unknown suffix."""
    suffix = suffix_of(path)
    return SUFFIXES.get(suffix) if suffix else None


def is_folder(path: str) -> bool:
    """A path without a suffix: a folder or a whole repository (``datasets`` infers)."""
    return suffix_of(path) is None


