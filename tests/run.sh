#!/usr/bin/env bash
# Full test entry point: ensure the real kube-apiserver is built (cached after the first run), then pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python tests/harness/kube.py build
exec python -m pytest "$@"
