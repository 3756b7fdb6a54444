"""The upstream folder the tests read is assembled from the pinned Go modules, byte for byte,
once per pin set; ``$FTSPEC_UPSTREAM_DIR`` overrides it and nothing reads ``../shared``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from harness import upstream, upstream_modules
from harness.controlplane_build import PINS, TRAINER, BuildError, module_dir
from harness.upstream import (
    UpstreamMissing,
    crd_paths,
    require_upstream_dir,
    runtime_paths,
    trainjob_crd_path,
)
from harness.upstream_modules import SOURCES_FILE, assembled_dir, copies
from helpers.upstream import RAYJOB_CRD, TRAININGRUNTIME_CRD, TRAINJOB_CRDS


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ftspec cache, and no ``FTSPEC_UPSTREAM_DIR``."""
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FTSPEC_UPSTREAM_DIR", raising=False)
    return tmp_path / "cache"


def test_every_file_is_the_module_file_byte_for_byte(cache: Path) -> None:
    folder = upstream.upstream_dir()
    assert folder.parent == cache / "upstream"
    rows = [line.split("\t") for line in (folder / SOURCES_FILE).read_text().splitlines()]
    expected = [(c.dest, f"{c.module}@{c.version}", c.path) for c in copies()]
    assert [tuple(row[:3]) for row in rows] == expected
    for item, row in zip(copies(), rows):
        data = (folder / item.dest).read_bytes()
        assert data == (module_dir(item.module, item.version) / item.path).read_bytes(), item.dest
        assert row[3] == hashlib.sha256(data).hexdigest()
    files = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert files == {c.dest for c in copies()} | {SOURCES_FILE}


def test_the_default_slot_is_the_pinned_release(cache: Path) -> None:
    folder = assembled_dir()
    trainer = module_dir(TRAINER, PINS.trainer) / "manifests/base/crds"
    for path in crd_paths(folder)[:3]:  # the Trainer CRDs; KubeRay's come from its own pin
        assert path.read_bytes() == (trainer / path.name).read_bytes()
    pinned = trainjob_crd_path(folder, PINS.trainer).read_bytes()
    assert trainjob_crd_path(folder, "master").read_bytes() == pinned
    assert trainjob_crd_path(folder, "v2.1.0").read_bytes() != pinned


def test_the_layout_has_every_name_the_tests_read(cache: Path) -> None:
    folder = assembled_dir()
    for relative in [*TRAINJOB_CRDS.values(), TRAININGRUNTIME_CRD, RAYJOB_CRD]:
        assert (folder / relative).is_file(), relative
    names = [p.name for p in runtime_paths(folder)]
    assert names == ["torchtune-llama3.2-1b.yaml", "torchtune-llama3.2-3b.yaml",
                     "torchtune-qwen2.5-1.5b.yaml"]


def test_assembled_once_then_read_without_go(cache: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    first = assembled_dir()

    def no_go(module: str, version: str) -> Path:
        raise AssertionError(f"module cache asked again for {module}@{version}")

    monkeypatch.setattr(upstream_modules, "module_dir", no_go)
    assert assembled_dir() == first


def test_the_key_follows_the_pins() -> None:
    assert upstream_modules.key(PINS) == upstream_modules.key()
    other = type(PINS)(**{**PINS.__dict__, "kuberay": "v1.6.0"})
    assert upstream_modules.key(other) != upstream_modules.key(PINS)


def test_a_module_that_cannot_be_had_is_a_clear_error(cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(module: str, version: str) -> Path:
        raise BuildError(f"download {module}@{version} failed (exit 1): go mod download")

    monkeypatch.setattr(upstream_modules, "module_dir", refused)
    with pytest.raises(UpstreamMissing, match=r"Go module cache: download github.com/kubeflow/"
                                              r"trainer/v2@v2\.3\.0 failed"):
        upstream.upstream_dir()
    assert not (cache / "upstream" / upstream_modules.key()).exists()  # nothing half-made


def test_the_variable_overrides_and_a_missing_folder_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FTSPEC_UPSTREAM_DIR", str(tmp_path))
    assert require_upstream_dir() == tmp_path
    monkeypatch.setenv("FTSPEC_UPSTREAM_DIR", str(tmp_path / "absent"))
    with pytest.raises(UpstreamMissing, match="absent"):
        require_upstream_dir()


def test_nothing_reads_the_shared_folder() -> None:
    tests = Path(__file__).resolve().parents[1]
    marks = ('"shared" / "upstream"', "shared/upstream")
    readers = [str(p.relative_to(tests)) for p in tests.rglob("*.py") if p != Path(__file__)
               and any(mark in p.read_text(encoding="utf-8") for mark in marks)]
    assert readers == []
