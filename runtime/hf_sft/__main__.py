"""``python -m ftspec.runtime.hf_sft`` (what ``accelerate launch -m`` runs)."""

from __future__ import annotations

from ftspec.runtime.hf_sft import main

main()
