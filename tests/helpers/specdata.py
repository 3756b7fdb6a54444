"""Spec data for pure tests: ``with_keys`` sets nested keys named ``a__b__c`` (a keyword
argument cannot hold a dot), so a test states only what differs from its base spec."""

from __future__ import annotations

from typing import Any


def with_keys(data: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each ``a__b__c=value`` of ``over`` set at ``data[a][b][c]``
    (intermediate mappings made as needed); ``data`` itself is changed and returned."""
    for key, value in over.items():
        node = data
        *parents, last = key.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return data
