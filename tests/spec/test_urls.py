"""The one URI parser (``ftspec.spec.urls``): every scheme the spec names, plain paths, and
the edges the hand-written parsers it replaced got wrong or differently."""

from __future__ import annotations

import pytest
from ftspec.spec.urls import hub_id, hub_parts, is_uri, pvc_parts, rest, scheme


@pytest.mark.parametrize(("uri", "kind", "tail"), [
    ("hf://org/name", "hf", "org/name"),
    ("HF://Org/Name", "hf", "Org/Name"),
    ("pvc://claim/sub/dir", "pvc", "claim/sub/dir"),
    ("file://data/x.jsonl", "file", "data/x.jsonl"),
    ("file:///abs/x.jsonl", "file", "/abs/x.jsonl"),
    ("s3://bucket/key://odd", "s3", "bucket/key://odd"),
    ("./plain/path", "", "./plain/path"),
    ("/abs/path", "", "/abs/path"),
])
def test_scheme_and_rest(uri: str, kind: str, tail: str) -> None:
    assert scheme(uri) == kind
    assert rest(uri) == tail
    assert is_uri(uri) is (kind != "")


def test_hub_locations() -> None:
    assert hub_id("hf://org/name/") == "org/name"
    assert hub_parts("hf://org/name") == ("org/name", "")
    assert hub_parts("hf://org/name/data/train.jsonl") == ("org/name", "data/train.jsonl")
    assert hub_parts("hf://org/name/data/") == ("org/name", "data")


def test_claims() -> None:
    assert pvc_parts("pvc://claim") == ("claim", "")
    assert pvc_parts("pvc://claim/") == ("claim", "")
    assert pvc_parts("pvc://claim/runs/a") == ("claim", "runs/a")
