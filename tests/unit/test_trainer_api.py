"""The Trainer API a cluster serves, kept per CRD identity (``reconciler.kubernetes.trainer_api``):
kept only under the CRD's uid and resourceVersion, recalled for that very CRD, and any
entry that is not one ftspec wrote is a miss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.kubernetes import trainer_api
from ftspec.spec.platforms import OVERRIDES_TRAINER, PATCHES_TRAINER

NAME = "trainjobs.trainer.kubeflow.org"


def crd(prop: str, uid: str = "u-1", version: str = "41") -> dict[str, Any]:
    return {"metadata": {"name": NAME, "uid": uid, "resourceVersion": version},
            "spec": {"versions": [{"schema": {"openAPIV3Schema": {"properties": {
                "spec": {"properties": {prop: {}}}}}}}]}}


@pytest.fixture(autouse=True)
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "on")
    return tmp_path / "cache" / "trainer-api"


def test_the_api_read_from_a_crd_is_recalled_for_that_crd_only() -> None:
    old = crd("podTemplateOverrides")
    assert trainer_api.recall(NAME, old["metadata"]) is None
    assert trainer_api.served(NAME, old) == OVERRIDES_TRAINER
    assert trainer_api.recall(NAME, old["metadata"]) == OVERRIDES_TRAINER
    # a write to the CRD (new resourceVersion) or the CRD created again (new uid) is a miss
    assert trainer_api.recall(NAME, {**old["metadata"], "resourceVersion": "42"}) is None
    assert trainer_api.recall(NAME, {**old["metadata"], "uid": "u-2"}) is None
    assert trainer_api.recall("rayjobs.ray.io", old["metadata"]) is None
    new = crd("runtimePatches", version="42")
    assert trainer_api.served(NAME, new) == PATCHES_TRAINER
    assert trainer_api.recall(NAME, new["metadata"]) == PATCHES_TRAINER
    assert trainer_api.recall(NAME, old["metadata"]) == OVERRIDES_TRAINER


def test_a_crd_without_its_identity_is_read_but_never_kept(cache_on: Path) -> None:
    bare = crd("podTemplateOverrides")
    bare["metadata"] = {"name": NAME}
    assert trainer_api.served(NAME, bare) == OVERRIDES_TRAINER
    assert trainer_api.recall(NAME, bare["metadata"]) is None
    assert not cache_on.exists() or not any(cache_on.iterdir())


def test_an_entry_ftspec_did_not_write_is_a_miss(cache_on: Path) -> None:
    meta = crd("runtimePatches")["metadata"]
    trainer_api.served(NAME, crd("runtimePatches"))
    (entry,) = cache_on.iterdir()
    key = json.loads(entry.read_text())["key"]
    for forged in ({"key": key, "trainer": "v9.9"}, {"key": "0" * 64, "trainer": "v2.1"},
                   {"trainer": "v2.1"}, ["v2.1"]):
        entry.write_text(json.dumps(forged))
        entry.chmod(0o600)
        assert trainer_api.recall(NAME, meta) is None, forged
    entry.write_text(json.dumps({"key": key, "trainer": OVERRIDES_TRAINER}))
    entry.chmod(0o600)
    assert trainer_api.recall(NAME, meta) == OVERRIDES_TRAINER  # the shape ftspec writes
    entry.chmod(0o644)  # readable by others: not a private file, not read
    assert trainer_api.recall(NAME, meta) is None


def test_with_the_cache_off_nothing_is_kept(monkeypatch: pytest.MonkeyPatch,
                                            cache_on: Path) -> None:
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "off")
    assert trainer_api.served(NAME, crd("runtimePatches")) == PATCHES_TRAINER
    assert trainer_api.recall(NAME, crd("runtimePatches")["metadata"]) is None
    assert not cache_on.exists()
