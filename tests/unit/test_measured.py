"""Measured properties from a run's log (``reconciler.measured``): exact arithmetic."""

from __future__ import annotations

import pytest
from ftspec.reconciler.measured import bar_runtime, measure, peak_cuda_bytes
from ftspec.reconciler.progress import track_text

TORCHTUNE = (
    "  0%|          | 0/2 [00:00<?, ?it/s]\r1|1|Loss: 5.7:  50%|#    | 1/2 [00:04<00:04, 4.0s/it]"
    "Step 1 | loss:5.7 lr:0.01 tokens_per_second_per_gpu:100.0 peak_memory_alloc:1.5\n"
    "1|2|Loss: 5.1: 100%|##########| 2/2 [00:07<00:00, 3.5s/it]"
    "Step 2 | loss:5.1 lr:0.0 tokens_per_second_per_gpu:120.0 peak_memory_alloc:2.0\n"
    "  0%|          | 0/2 [00:00<?, ?it/s]\r2|3|Loss: 4.9:  50%|#    | 1/2 [00:03<00:03, 3.0s/it]"
    "Step 3 | loss:4.9 lr:0.0\n"
    "2|4|Loss: 4.8: 100%|##########| 2/2 [01:02<00:00, 3.0s/it]Step 4 | loss:4.8 lr:0.0\n"
)


def test_torchtune_runtime_is_the_bars_elapsed_summed_over_epochs() -> None:
    assert bar_runtime(TORCHTUNE) == 7 + 62
    assert bar_runtime("no bar here\n") is None


def test_a_sub_second_epoch_is_timed_by_its_steps_over_the_bars_rate() -> None:
    fast = ("1|16|Loss: 3.65: 100%|##########| 16/16 [00:00<00:00, 29.56it/s]"
            "Step 16 | loss:3.65 lr:0.0\n")
    assert bar_runtime(fast) == pytest.approx(16 / 29.56)
    slow = "1|2|Loss: 5.1: 100%|##########| 2/2 [00:12<00:00, 5.0s/it]\n"
    assert bar_runtime(slow) == 12  # whole seconds are close enough from 10 s on


def test_torchtune_tokens_from_the_counted_dataset() -> None:
    tracker = track_text(TORCHTUNE, total_steps=4, steps_per_epoch=2)
    got = measure(TORCHTUNE, tracker, validity="ok", devices=2, global_batch=4,
                  dataset={"rows": 8, "tokens": 1000}, max_rss_bytes=5 * 2**20)
    # 2 epochs of the 8 rows: 2000 tokens in 69 s, over 2 devices
    assert got["train_runtime_s"] == 69
    assert got["dataset_tokens"] == 2000
    assert got["dataset_tokens_per_second"] == round(2000 / 69, 1)
    assert got["dataset_tokens_per_second_per_device"] == round(2000 / 69 / 2, 1)
    # the CUDA peak the recipe logged wins over the process's RSS
    assert got["peak_memory"] == {"kind": "cuda max allocated", "bytes": 2 * 2**30}


def test_partial_epoch_counts_the_rows_the_steps_took() -> None:
    log = "Step 1 | loss:5.0 lr:0.1\n  1/1 [00:10<00:00]\n"
    tracker = track_text(log, total_steps=1, steps_per_epoch=1)
    got = measure(log, tracker, validity="ok", devices=1, global_batch=4,
                  dataset={"rows": 40, "tokens": 4000}, max_rss_bytes=3 * 2**20)
    assert got["dataset_tokens"] == 400  # 4 rows of 100 tokens on average
    assert got["peak_memory"]["kind"].startswith("cpu peak RSS")


def test_trl_counts_its_own_tokens_and_runtime() -> None:
    log = ("{'loss': 2.5, 'learning_rate': 0.001, 'num_tokens': 512.0, 'epoch': 0.5}\n"
           "{'loss': 2.0, 'learning_rate': 0.0, 'num_tokens': 1024.0, 'epoch': 1.0}\n"
           "{'train_runtime': 8.0, 'train_loss': 2.25, 'epoch': 1.0}\n")
    tracker = track_text(log, steps_per_epoch=2)
    got = measure(log, tracker, validity="ok", devices=1, global_batch=2)
    assert got["train_runtime_s"] == 8.0
    assert got["dataset_tokens"] == 1024
    assert got["dataset_tokens_per_second"] == 128.0
    assert got["dataset_tokens_how"] == "counted by the trainer (num_tokens)"


@pytest.mark.parametrize(("text", "peak"), [
    ("[ftspec] cuda_max_allocated_bytes=123\n", 123),
    ("Step 1 | loss:1.0 peak_memory_alloc:0.5\n", 2**29),
    ("nothing\n", None),
])
def test_cuda_peak(text: str, peak: int | None) -> None:
    assert peak_cuda_bytes(text) == peak
