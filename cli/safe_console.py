"""The rich console every live command prints through, with text made safe first.

Strings given to ``print`` pass ``ftspec.cli.output.safe_text``: credentials redacted and
control characters escaped (rich markup stays markup). Imported only where rich is.
"""

from __future__ import annotations

from typing import Any

from ftspec.cli.output import safe_text
from rich.console import Console


class SafeConsole(Console):
    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(safe_text(o) if isinstance(o, str) else o for o in objects), **kwargs)
