"""The one progress parser: each launcher's own metric records -> per-step progress."""

from __future__ import annotations

import itertools

from ftspec.reconciler.logread import LogFollowerText
from ftspec.reconciler.pace import duration
from ftspec.reconciler.progress import (
    Tracker,
    clean_lines,
    parse_line,
    progress_line,
    sparkline,
    split_lines,
)

# torchtune 0.6.1 StdoutLogger.log_dict: "Step N | " then "name:value " per metric
TORCHTUNE = "Step 3 | loss:5.4728 lr:0.0095 tokens_per_second_per_gpu:432.1 "
# transformers 5 PrinterCallback / ProgressCallback: floats formatted with .4g, as strings
TRAINER = ("{'loss': '5.771', 'grad_norm': '1.234', 'learning_rate': '0.01', "
           "'num_tokens': '2048', 'mean_token_accuracy': '0.1', 'epoch': '0.25'}")
TRAINER_END = ("{'train_runtime': '12.3', 'train_samples_per_second': '5.2', "
               "'train_steps_per_second': '1.3', 'train_loss': '4.1', 'epoch': '1'}")


def test_torchtune_metric_logger_line() -> None:
    rec = parse_line(TORCHTUNE)
    assert rec is not None
    assert (rec.step, rec.loss, rec.lr, rec.tokens_per_s) == (3, 5.4728, 0.0095, 432.1)


def test_torchtune_metrics_after_a_progress_bar_fragment() -> None:
    """stdout and the stderr bar share the log: the metrics line may follow a bar redraw."""
    line = "1|3|Loss: 5.47:  19%|█▉        | 3/16 [00:01<00:05,  2.4it/s]" + TORCHTUNE
    rec = parse_line(line)
    assert rec is not None and rec.lr == 0.0095 and rec.step == 3


def test_trainer_records_and_numpy_reprs() -> None:
    rec = parse_line(TRAINER)
    assert rec is not None
    assert (rec.step, rec.loss, rec.lr, rec.epoch, rec.tokens) == (None, 5.771, 0.01, 0.25, 2048)
    old = parse_line("{'loss': np.float64(2.5), 'learning_rate': 1e-05, 'epoch': 0.5}")
    assert old is not None and (old.loss, old.lr, old.epoch) == (2.5, 1e-05, 0.5)
    end = parse_line(TRAINER_END)
    assert end is not None and end.final["train_loss"] == 4.1 and end.loss is None
    assert parse_line("{'eval_loss': '3.9', 'epoch': '1'}").eval_loss == 3.9  # type: ignore


def test_fallbacks_and_noise() -> None:
    bar = parse_line("1|7|Loss: 4.4218:  43%|████▎     | 7/16")
    assert bar is not None and (bar.step, bar.loss, bar.epoch, bar.lr) == (7, 4.4218, 1.0, None)
    assert parse_line("Writing logs to /tmp/x/log_1.txt") is None
    assert parse_line("{'model': 'llama'}") is None  # a dict without metrics


def test_tracker_counts_trainer_records_and_knows_the_total() -> None:
    clock = itertools.count(0.0, 2.0)
    t = Tracker(total_steps=8, steps_per_epoch=4, logging_steps=2,
                clock=lambda: next(clock))
    lines = [f"{{'loss': '{5 - i / 2}', 'learning_rate': '0.01', 'epoch': '{(i + 1) / 2}'}}"
             for i in range(3)]
    new = t.feed(lines)
    assert [p.step for p in new] == [2, 4, 6]  # epoch x steps per epoch
    event = t.event()
    assert event["step"] == 6 and event["total_steps"] == 8 and event["epoch"] == 1.5
    assert event["seconds_left"] == 2.0  # 2 steps left at 1 s a step (2 s per 2 steps)
    t.feed([TRAINER_END])
    assert t.final["train_runtime"] == 12.3


def test_tracker_ignores_repeats_and_reports_trend() -> None:
    t = Tracker(total_steps=10, steps_per_epoch=5)
    t.feed([f"Step {i} | loss:{6 - i * 0.3} lr:0.01 " for i in range(1, 9)])
    assert t.feed(["Step 8 | loss:1.0 lr:0.01 ", "1|8|Loss: 1.0"]) == []  # seen already
    assert t.trend() == "falling" and t.last is not None and t.last.epoch == 2
    line = progress_line(t.event())
    assert line.startswith("step 8/10 (80%) · epoch 2 · loss 3.6000 ↓ · lr 1.00e-02"), line


def test_carriage_returns() -> None:
    text = "a\r50%\r100%\nStep 1 | loss:2 \n"
    assert split_lines(text) == ["a", "50%", "100%", "Step 1 | loss:2 "]
    assert clean_lines(text) == ["100%", "Step 1 | loss:2 "]


def test_log_follower_text_gives_each_line_once() -> None:
    f = LogFollowerText()
    assert f.new_lines("one\ntw") == ["one"]
    assert f.new_lines("one\ntwo\nthr") == ["two"]
    assert f.new_lines("one\ntwo\nthree", final=True) == ["three"]
    assert f.new_lines("one\ntwo\nthree", final=True) == []


def test_sparkline_and_duration() -> None:
    assert sparkline([3.0, 2.0, 1.0]) == "█▅▁"
    assert len(sparkline([float(i) for i in range(100)], width=20)) == 20
    assert (duration(42), duration(185), duration(3720), duration(183600), duration(None)) == \
        ("42s", "3m 05s", "1h 02m", "2d 03h", "?")
