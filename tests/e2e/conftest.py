"""Shared, costly setup of the e2e tests: the tiny assets are generated once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ftspec.reconciler.local.tiny import TinyAssets, generate_tiny_assets
from helpers.tinyspec import make_workdir, run_env

SHARED_ASSETS = "FTSPEC_TEST_TINY_ASSETS"


@pytest.fixture(scope="session")
def tiny_assets(tmp_path_factory: pytest.TempPathFactory) -> TinyAssets:
    """Generated once; a test re-run in a private PID namespace (``helpers.pidns``) reuses
    the outer session's (they are reused when their manifest matches)."""
    shared = os.environ.get(SHARED_ASSETS)
    dest = Path(shared) if shared else tmp_path_factory.mktemp("tiny") / "llama2"
    os.environ[SHARED_ASSETS] = str(dest)
    return generate_tiny_assets(dest, family="llama2")


@pytest.fixture(scope="session")
def e2e_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return run_env(tmp_path_factory.mktemp("env"))


@pytest.fixture
def workdir(tmp_path: Path, tiny_assets: TinyAssets) -> Path:
    """A working directory like the repository after `ftspec quickstart`."""
    return make_workdir(tmp_path / "work", tiny_assets.dataset_path.parent)
