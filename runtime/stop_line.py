"""Contract: the line the stop callback (``hf_sft/stop.py``) prints when a run stopped by
``training.stop``, which ``reconciler/stopped.py`` reads back from the log."""

from __future__ import annotations

STOP_LINE = "[ftspec] stop "
"""Prefix of the one line the main process prints, followed by a JSON object."""
