"""The committed snapshot of torchtune's shipped configs matches the installed torchtune."""

from __future__ import annotations

import pytest
from ftspec.targets.torchtune_configs import torchtune_installed
from ftspec.targets.torchtune_snapshot import SNAPSHOT, build_snapshot, dump, shipped


@pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")
def test_snapshot_matches_the_installed_torchtune() -> None:
    current = dump(build_snapshot())
    assert SNAPSHOT.read_text(encoding="utf-8") == current, (
        "targets/torchtune_shipped.json is stale: run python -m ftspec.targets.torchtune_snapshot")


def test_snapshot_answers_without_torchtune() -> None:
    assert shipped("llama3_2/1B_lora_single_device")
    assert not shipped("llama3_2/1B_nonexistent")
