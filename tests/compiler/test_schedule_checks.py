"""The schedule's errors (``compiler.checks.schedule_errors``), through the one compile path:
a dataset of known size that fills no global batch on a launcher that drops the partial one,
and a run shorter than its warm-up, each at the spec field with the arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.build import full_steps
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.spec.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny-local.yaml"


def _errors(tmp_path: Path, *sets: str) -> list[Diagnostic]:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY.read_text())
    result = compile_spec(SpecInput(spec, (), sets), "checks")
    return [d for d in result.diagnostics if d.is_error]


def test_the_quickstart_trains_its_sixteen_steps(tmp_path: Path) -> None:
    assert _errors(tmp_path) == []


def test_batch_larger_than_the_dataset_is_a_located_error(tmp_path: Path) -> None:
    """The issue's case: 64 rows, global batch 128 (32 accumulations of 4): torchtune trains
    no step (``len(dataloader) // gradient_accumulation_steps`` = 16 // 32)."""
    (found,) = _errors(tmp_path, "training.global_batch_size=128")
    assert found.code == "rule.zero-steps"
    assert found.path == ("training", "global_batch_size")
    assert found.summary == ("64 rows / global batch 128 = 0 full batches: torchtune drops "
                             "the partial batch, so the run would train 0 steps")
    assert found.hint == ("use a global batch of at most 64 (= micro batch x gradient "
                          "accumulation x 1 process), or train on more rows "
                          "(data.train.num_examples)")
    # at the value of the flag that set it: training.global_batch_size=|128
    assert found.span is not None and \
        (found.span.file, found.span.line, found.span.col) == ("--set[0]", 1, 28)


def test_the_error_points_at_the_spec_line(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY.read_text().replace("global_batch_size: 4 ", "global_batch_size: 128 "))
    (found,) = [d for d in compile_spec(SpecInput(spec), "checks").diagnostics if d.is_error]
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1)
                if "global_batch_size: 128" in text)
    assert found.span is not None and (found.span.file, found.span.line, found.span.col) == \
        (str(spec), line, 22)


def test_a_launcher_that_keeps_the_partial_batch_trains_a_step(tmp_path: Path) -> None:
    """The Hugging Face Trainer keeps the last partial batch (``dataloader_drop_last`` off)
    and steps on a partial accumulation: 64 rows at global batch 128 train one step."""
    found = _errors(tmp_path, "training.global_batch_size=128", "launcher=accelerate")
    assert [d for d in found if d.code == "rule.zero-steps"] == []


@pytest.mark.parametrize(("rows", "world", "micro", "accum", "steps"), [
    (64, 1, 4, 32, 0), (64, 1, 4, 16, 1), (64, 1, 4, 1, 16), (127, 2, 1, 64, 1),
    (52002, 4, 4, 2, 1625), (3, 1, 4, 1, 0)])
def test_full_steps_as_torchtune_counts_them(rows: int, world: int, micro: int, accum: int,
                                             steps: int) -> None:
    """Each rank reads ceil(rows / world) rows (the distributed sampler pads), whole micro
    batches only, one step per full accumulation."""
    assert full_steps(rows, world, micro, accum) == steps


def test_fewer_steps_than_the_warmup(tmp_path: Path) -> None:
    (found,) = _errors(tmp_path, "training.global_batch_size=16",
                       "training.scheduler.warmup_steps=10")
    assert found.code == "rule.warmup-longer"
    assert found.path == ("training", "global_batch_size")
    assert found.summary == ("64 rows / global batch 16 = 4 steps an epoch x 1 epoch = 4 "
                             "optimizer steps, fewer than the 10 warm-up steps: the learning "
                             "rate would never reach 0.01")


def test_max_steps_shorter_than_the_warmup_is_at_max_steps(tmp_path: Path) -> None:
    found = _errors(tmp_path, "training.max_steps=3", "training.epochs=null",
                    "training.scheduler.warmup_steps=5", "launcher=accelerate")
    (warm,) = [d for d in found if d.code == "rule.warmup-longer"]
    assert warm.path == ("training", "max_steps")
    assert warm.summary == ("max_steps 3 < the 5 warm-up steps: the run would end before "
                            "the learning rate reaches 0.01")


def test_a_capped_epoch_shorter_than_the_warmup_is_at_the_cap(tmp_path: Path) -> None:
    (found,) = _errors(tmp_path, "training.max_steps_per_epoch=1")
    assert found.path == ("training", "max_steps_per_epoch")
    assert found.summary.startswith("max_steps_per_epoch 1 x 1 epoch = 1 optimizer steps, "
                                    "fewer than the 2 warm-up steps")
