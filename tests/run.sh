#!/usr/bin/env bash
# Full test entry point: ensure the pinned control plane and the real controllers are built
# (cached by their pins after the first run), then pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python tests/harness/controlplane_build.py build
exec python -m pytest "$@"
