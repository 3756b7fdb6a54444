"""``python -m ftspec.targets.entrypoints.hf_sft`` (what ``accelerate launch -m`` runs)."""

from __future__ import annotations

from ftspec.targets.entrypoints.hf_sft import main

main()
