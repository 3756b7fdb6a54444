"""torchtune's shipped configs read the same through the spec loader (libyaml fast path)
as through ruamel's own safe loader, which ``torchtune_configs`` used before."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.targets import torchtune_configs as tc
from ruamel.yaml import YAML


def _configs() -> list[Path]:
    if not tc.torchtune_installed():
        return []
    return sorted(tc.configs_dir().rglob("*.yaml"))


@pytest.mark.slow
def test_every_shipped_config_reads_as_ruamel_reads_it() -> None:
    configs = _configs()
    assert len(configs) > 100, "torchtune's recipe configs should be installed"
    for path in configs:
        stat = path.stat()
        tc._parsed.cache_clear()
        ours = tc._parsed(path, stat.st_mtime_ns, stat.st_size)
        assert ours == YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8")), path


def test_a_config_the_spec_loader_refuses_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb: 2024-01-02\nc: {d: x}\n", encoding="utf-8")
    stat = path.stat()
    got = tc._parsed(path, stat.st_mtime_ns, stat.st_size)
    assert got == YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    assert not isinstance(got["b"], str)  # ruamel's timestamp, as before
