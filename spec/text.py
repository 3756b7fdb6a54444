"""Text from a spec made safe to show: one line, nothing a terminal or a shell acts on."""

from __future__ import annotations


def escape_text(text: str) -> str:
    """``text`` on one line with nothing a terminal or shell would act on: line breaks,
    control characters (ANSI escapes) and other non-printable code points become ``\\n``,
    ``\\x1b``, ``\\u2028`` style escapes (for reading, not for parsing back)."""
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)
