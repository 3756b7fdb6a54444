"""Every example x every applicable target: artifacts equal tests/golden byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.targets import get_target
from helpers.examples import EXAMPLES, applicable, available_targets, example_job
from helpers.golden import GOLDEN_ROOT, check_golden

CASES = [(ex, t) for ex in EXAMPLES for t in available_targets()]


@pytest.mark.parametrize("example,target", CASES,
                         ids=[f"{e.stem}-{t}" for e, t in CASES])
def test_golden(example: Path, target: str, update_golden: bool) -> None:
    job = example_job(example)
    folder = GOLDEN_ROOT / example.stem / target
    if target not in applicable(job):
        assert not folder.exists() or update_golden, \
            f"{folder} exists but {target} does not apply to {example.name}"
        if update_golden and folder.exists():
            import shutil

            shutil.rmtree(folder)
        return
    artifacts = get_target(target).compile(job)
    files = {a.path: a.content for a in artifacts}
    check_golden(folder, files, update_golden)
    again = {a.path: a.content for a in get_target(target).compile(example_job(example))}
    assert again == files, "compile is not deterministic"


def test_every_example_has_a_target() -> None:
    for example in EXAMPLES:
        assert applicable(example_job(example)), f"no target applies to {example.name}"
