#!/usr/bin/env bash
# Full test entry point: ensure the real kube-apiserver 1.20 and the current control plane with the
# real controllers are built (each cached by its pins after the first run), then pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python tests/harness/kube.py build
python tests/harness/controlplane_build.py build
exec python -m pytest "$@"
