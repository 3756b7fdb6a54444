"""The transcripts in docs/*.md are the commands' real output, so they cannot drift.

A transcript is a fenced block right after a marker comment:

- ``<!-- transcript -->`` then a ```` ```console ```` block: each ``$ COMMAND`` line is run with
  ``bash -c`` in one throw-away project per document (the tiny examples copied in, ``ftspec
  quickstart`` run once), in document order, so a block sees what earlier blocks did (a spec
  edited, a plan saved). Its stdout and stderr, merged, follow the line.
- ``<!-- transcript: golden PATH -->``: the block is the golden file PATH (relative to the
  repository), which its own golden test produces from the command's code.

Before the comparison the output is normalised, as docs/README.md says: the project's folder
reads ``<project>``, the Python environment's folder ``.venv``, a ``sha256:`` digest
``sha256:<digest>``, a duration such as ``12s`` or ``2m 12s`` ``<duration>``. ``pytest
--update-golden`` rewrites the blocks from the output (review the diff).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
VENV = Path(sys.executable).parent.parent
MARKER = re.compile(r"<!-- transcript(?:: golden (?P<golden>\S+))? -->\n"
                    r"(?P<fence>```(?P<info>\w*)\n)(?P<body>.*?)```\n", re.DOTALL)
DIGEST = re.compile(r"sha256:[0-9a-f]{6,64}")
DURATION = re.compile(r"\b(?:\d+h ?)?(?:\d+m ?)?\d+(?:\.\d+)?s\b")


@dataclass
class Block:
    """One transcript: where its body lies in the document, and what produces it."""

    start: int
    end: int
    body: str
    golden: str | None


def blocks(text: str) -> list[Block]:
    return [Block(m.start("body"), m.end("body"), m.group("body"), m.group("golden"))
            for m in MARKER.finditer(text)]


def commands(body: str) -> list[str]:
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def normalise(text: str, project: Path) -> str:
    text = text.replace(str(project.resolve()), "<project>").replace(str(project), "<project>")
    text = text.replace(str(VENV), ".venv")
    text = DIGEST.sub("sha256:<digest>", text)
    return DURATION.sub("<duration>", text)


def _project(tmp: Path) -> tuple[Path, dict[str, str]]:
    project = tmp / "project"
    (project / "examples").mkdir(parents=True)
    for name in ("tiny-local.yaml", "tiny-sweep.yaml"):
        shutil.copy(ROOT / "examples" / name, project / "examples" / name)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               COLUMNS="80", TERM="dumb", NO_COLOR="1", FTSPEC_CACHE_DIR=str(tmp / "cache"))
    env.pop("FORCE_COLOR", None)
    subprocess.run(["ftspec", "quickstart"], cwd=project, env=env, check=True,
                   capture_output=True, timeout=300)
    return project, env


def produce(block: Block, project: Path, env: dict[str, str]) -> str:
    if block.golden is not None:
        return (ROOT / block.golden).read_text(encoding="utf-8")
    cmds = commands(block.body)
    assert cmds, f"a console transcript with no `$ ` command: {block.body[:80]!r}"
    out = []
    for cmd in cmds:
        done = subprocess.run(["bash", "-c", cmd], cwd=project, env=env, text=True, check=False,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        out.append(f"$ {cmd}\n{normalise(done.stdout, project)}")
    return "".join(out)


DOC_FILES = sorted(p.name for p in DOCS.glob("*.md") if blocks(p.read_text(encoding="utf-8")))


def test_the_day_two_guide_has_transcripts() -> None:
    assert "day-two.md" in DOC_FILES


@pytest.mark.slow
@pytest.mark.parametrize("name", DOC_FILES)
def test_transcripts_are_the_real_output(name: str, tmp_path: Path, update_golden: bool) -> None:
    path = DOCS / name
    text = path.read_text(encoding="utf-8")
    project, env = _project(tmp_path)
    found = blocks(text)
    produced = [produce(b, project, env) for b in found]
    if update_golden:
        for block, new in reversed(list(zip(found, produced, strict=True))):
            text = text[:block.start] + new + text[block.end:]
        path.write_text(text, encoding="utf-8")
        return
    for block, new in zip(found, produced, strict=True):
        assert block.body == new, (f"{path}: the transcript of {commands(block.body) or block.golden}"
                                   f" differs from the output; run pytest --update-golden")


@pytest.mark.parametrize(("raw", "want"), [
    ("in /tmp/p/x/.ftspec/runs", "in <project>/.ftspec/runs"),
    ("sha256:9284b6427a96 (64 rows)", "sha256:<digest> (64 rows)"),
    ("12s elapsed · 2m 12s · 8.3s · 1h 2m 3s",
     "<duration> elapsed · <duration> · <duration> · <duration>"),
    ("step 16/16 · about 20 s on an idle CPU", "step 16/16 · about 20 s on an idle CPU"),
])
def test_normalise(raw: str, want: str) -> None:
    assert normalise(raw, Path("/tmp/p/x")) == want


def test_blocks_reads_markers_and_bodies() -> None:
    text = ("x\n<!-- transcript -->\n```console\n$ ftspec version\nftspec 1\n```\n"
            "<!-- transcript: golden tests/golden/a.txt -->\n```text\nA\n```\n```sh\nnot one\n```\n")
    got = blocks(text)
    assert [(b.body, b.golden) for b in got] == [("$ ftspec version\nftspec 1\n", None),
                                                  ("A\n", "tests/golden/a.txt")]
    assert text[got[0].start:got[0].end] == got[0].body
