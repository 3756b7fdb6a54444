"""A :class:`SpecDraft` as spec YAML: canonical key order, each value's origin as a comment.

ruamel.yaml's round-trip types carry the end-of-line comments; short lists of scalars are
written in flow style so a comment sits on the value's own line.
"""

from __future__ import annotations

import io
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import KeyPath
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

ORDER = ("apiVersion", "kind", "metadata", "model", "data", "method", "training",
         "distributed", "resources", "output", "launcher", "entrypoint", "deploy", "secrets",
         "overrides")


def render(draft: SpecDraft, header: str) -> str:
    top = {k: draft.data[k] for k in ORDER if k in draft.data}
    top.update({k: v for k, v in draft.data.items() if k not in top})
    doc = _node(top, (), draft.origins)
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    buf = io.StringIO()
    yaml.dump(doc, buf)
    lines = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return lines + buf.getvalue()


def _node(value: Any, path: KeyPath, origins: dict[KeyPath, str]) -> Any:
    if isinstance(value, dict):
        out = CommentedMap()
        for key, child in value.items():
            out[key] = _node(child, path + (key,), origins)
            origin = origins.get(path + (key,))
            if origin:
                out.yaml_add_eol_comment(f"# {origin}", key, column=0)
        return out
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_node(v, path + (i,), origins) for i, v in enumerate(value))
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            seq.fa.set_flow_style()
        return seq
    return value
