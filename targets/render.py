"""Deterministic YAML and JSON text for manifests and submissions.

YAML keeps the insertion order the targets build (apiVersion, kind, metadata, spec …),
writes multi-line strings as literal blocks and quotes every scalar that a YAML 1.1 reader
(kubectl, client-go's sigs.k8s.io/yaml) would turn into a bool or null, such as ``yes``/``on``.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

YAML11_SPECIAL = re.compile(
    r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
    r"|null|Null|NULL|~|)$"
)


_UNPRINTABLE = ("[^\n\t\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
                "|[\x85\u2028\u2029\ufeff]")
"""What a literal block cannot hold: control characters (ESC, CR, …), surrogates and the
characters YAML reads as line breaks. Such text is written double-quoted with escapes.
(A pattern, compiled by ``re`` on first use: compiling its ranges costs milliseconds that
``plan``, which unpickles artifacts but writes no YAML, need not pay.)"""


def _str_representer(dumper: Any, data: str) -> Any:
    tag = "tag:yaml.org,2002:str"
    if "\n" in data and not re.search(_UNPRINTABLE, data):
        return dumper.represent_scalar(tag, data, style="|")
    if YAML11_SPECIAL.match(data):
        return dumper.represent_scalar(tag, data, style="'")
    return dumper.represent_scalar(tag, data)


def to_yaml(obj: Any) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.representer.sort_base_mapping_type_on_output = False
    yaml.representer.add_representer(str, _str_representer)
    yaml.representer.ignore_aliases = lambda _data: True
    out = io.StringIO()
    yaml.dump(obj, out)
    return out.getvalue()


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"
