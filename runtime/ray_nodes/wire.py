"""What the multi-node driver and the code that compiles its job agree on: the plan's
environment variable and encoding, the rank placeholders the driver fills, and the log lines
that tell each node's state. Standard library only: ``ftspec.targets.ray_nodes`` writes the
plan at compile time, the driver reads it on the cluster, the Ray backends read its log."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

NODES_ENV = "FTSPEC_NODES"
RANK, ADDR, PORT = "${NODE_RANK}", "${MASTER_ADDR}", "${MASTER_PORT}"
NODE_LOG_PREFIX = "[ftspec-node]"
"""Driver log lines that tell each node's state (the Ray backend's status reads them)."""


def encode_plan(plan: dict[str, Any]) -> str:
    """Base64 JSON (Ray expands ``${…}`` in runtime_env variables; base64 keeps the
    placeholders intact)."""
    return base64.b64encode(json.dumps(plan, sort_keys=True).encode()).decode()


def decode_plan(text: str) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads(base64.b64decode(text))
    return plan


def fill(argv: list[str], rank: int, addr: str, port: int) -> list[str]:
    """The argv of one node: placeholders replaced."""
    return [a.replace(RANK, str(rank)).replace(ADDR, addr).replace(PORT, str(port))
            for a in argv]


def node_states(log: str) -> list[dict[str, str]]:
    """Each node's latest state from the driver's ``[ftspec-node] rank=R key=value …``
    lines (rank order); empty for a single-node job."""
    latest: dict[str, dict[str, str]] = {}
    for line in log.splitlines():
        at = line.find(NODE_LOG_PREFIX)
        if at < 0:
            continue
        fields = dict(re.findall(r"(\w+)=(\S+)", line[at + len(NODE_LOG_PREFIX):]))
        rank = fields.get("rank", "*")
        if rank.isdigit():
            latest[rank] = {**latest.get(rank, {}), **fields}
    return [latest[r] for r in sorted(latest, key=int)]
