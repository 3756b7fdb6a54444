"""transformers' schedule name and kwargs as the spec's schedule (``importers.schedule``), and
the compiled schedule as transformers builds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.importers.schedule import schedule
from ftspec.compiler.importers.trl import import_trl
from helpers.trl_parse import compiled_files, trl_reads

CORPUS = Path(__file__).parent / "corpus" / "trl"


@pytest.mark.parametrize(("name", "kwargs", "lr", "want"), [
    ("cosine_with_min_lr", {"min_lr_rate": 0.1}, 4e-5, ("cosine", {"min_lr_ratio": 0.1})),
    ("cosine_with_min_lr", {"min_lr": 1e-6}, 1e-5, ("cosine", {"min_lr_ratio": 0.1})),
    ("cosine_with_min_lr", {"min_lr_rate": 0.1, "num_cycles": 1.0}, 1e-5,
     ("cosine", {"min_lr_ratio": 0.1, "num_cycles": 1.0})),
    ("cosine", {"num_cycles": 0.25}, 1e-5, ("cosine", {"num_cycles": 0.25})),
    ("linear", None, 1e-5, ("linear", {})),
])
def test_schedules_the_spec_can_say(name: str, kwargs: dict[str, float] | None, lr: float,
                                    want: tuple[str, dict[str, float]]) -> None:
    found = schedule(name, kwargs, lr)
    assert (found.name, found.fields) == (want[0], pytest.approx(want[1]))
    assert found.unread == [] and found.problem is None


@pytest.mark.parametrize(("name", "kwargs", "problem"), [
    ("cosine_with_min_lr", {}, "exactly one of min_lr / min_lr_rate"),
    ("cosine_with_min_lr", {"min_lr": 1e-6, "min_lr_rate": 0.1}, "exactly one"),
    ("warmup_stable_decay", {"num_decay_steps": 10}, "warmup_stable_decay has no spec"),
])
def test_schedules_transformers_refuses_or_the_spec_lacks(name: str, kwargs: dict[str, float],
                                                          problem: str) -> None:
    found = schedule(name, kwargs, 1e-5)
    assert found.name is None and found.problem is not None and problem in found.problem


def test_unread_kwargs_are_listed() -> None:
    found = schedule("polynomial", {"power": 2.0}, 1e-5)
    assert (found.name, found.unread) == ("polynomial", ["power"])


def test_min_lr_floor_trains_as_the_source_schedule() -> None:
    """open-r1's recipes: cosine_with_min_lr at min_lr_rate 0.1. The compiled sft.yaml gives
    transformers' own scheduler the same arguments, and its last rate is 10% of the peak."""
    import torch
    from transformers import get_scheduler

    name = "openr1-distill-7b-sft.yaml"
    imported = import_trl(CORPUS / name)
    assert imported.data["training"]["scheduler"]["min_lr_ratio"] == 0.1
    assert not [w for w in imported.warnings if w.path and w.path[0].startswith("lr_sched")]
    _, source, _, _ = trl_reads((CORPUS / name).read_text())
    _, got, _, _ = trl_reads(compiled_files(imported.text, name)["sft.yaml"])
    assert (got.lr_scheduler_type, got.lr_scheduler_kwargs) == \
        (source.lr_scheduler_type, source.lr_scheduler_kwargs)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=got.learning_rate)
    sched = get_scheduler(got.lr_scheduler_type, opt, num_warmup_steps=3,
                          num_training_steps=100,
                          scheduler_specific_kwargs=got.lr_scheduler_kwargs)
    for _ in range(100):
        opt.step()
        sched.step()
    assert sched.get_last_lr()[0] == pytest.approx(0.1 * got.learning_rate)
