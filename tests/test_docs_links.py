"""The links of README.md and docs/ lead somewhere: each relative link names a file of the
repository and, with a ``#fragment``, a heading of that file (GitHub's anchor of it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def broken(page: Path) -> list[str]:
    out = []
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif fragment and (dest.is_dir() or fragment not in anchors(dest)):
            out.append(f"{target}: no heading #{fragment}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_links_lead_somewhere(page: Path) -> None:
    assert broken(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Resuming (`a.b_c`)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](there.md#resuming-abc) [b](there.md#resuming-ab_c) [c](gone.md) "
                    "[d](https://example.invalid/x) [e](#top)\n```\n[f](in-a-fence.md)\n```\n"
                    "# Top\n", encoding="utf-8")
    assert broken(page) == ["there.md#resuming-abc: no heading #resuming-abc",
                            "gone.md: no such file"]


def test_the_readme_links_the_day_two_guide() -> None:
    assert "docs/day-two.md" in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
