"""The one progress model (``reconciler.pace``): the time left from step times, the percent,
a finished run and a run past its planned steps; and the step times ``progress.Tracker``
reads from the launchers' own progress bars."""

from __future__ import annotations

import itertools

from ftspec.reconciler.pace import (
    MIN_STEPS,
    WINDOW,
    Progress,
    StepTime,
    left_text,
    position,
    progress,
    seconds_left,
    step_text,
    timing,
)
from ftspec.reconciler.progress import Tracker, parse_bar, progress_line, track_text


def _times(*pairs: tuple[int, float]) -> list[StepTime]:
    return [StepTime(step, at) for step, at in pairs]


def test_time_left_is_the_steps_to_go_at_the_pace_of_the_step_times() -> None:
    times = _times((1, 10.0), (2, 12.0), (3, 14.0), (4, 16.0))
    assert seconds_left(times, 10, ended=False) == 12.0  # 6 steps at 2 s
    # the pace is the last WINDOW steps': a run that slowed down says so
    assert WINDOW == 20
    slow = _times(*[(s, float(s)) for s in range(1, 41)], (41, 100.0))  # 1 s, then 60 s
    # steps 22..41: 78 s for 19 steps (over all 41 it would be 99 s for 40 steps)
    assert seconds_left(slow, 50, ended=False) == 78 / 19 * 9


def test_no_time_left_before_two_steps_or_without_time_between_them() -> None:
    assert MIN_STEPS == 2
    assert seconds_left(_times((1, 5.0)), 10, ended=False) is None
    # step 1 after 30 s of loading: one step is no pace, even from the run's start
    assert progress(1, 10, logged=[], elapsed_s=30.0, ended=False).seconds_left is None
    assert progress(2, 10, logged=[], elapsed_s=30.0, ended=False).seconds_left == 120.0
    # two steps read at the same moment (one poll) give no pace
    assert seconds_left(_times((2, 7.0), (3, 7.0)), 10, ended=False) is None
    assert seconds_left([], 10, ended=False) is None
    assert seconds_left(_times((2, 1.0), (3, 2.0)), None, ended=False) is None  # no total


def test_a_finished_run_has_no_time_left_and_its_percent() -> None:
    times = _times((1, 1.0), (2, 2.0), (3, 3.0))
    assert seconds_left(times, 3, ended=True) is None
    done = progress(16, 16, logged=times, elapsed_s=40.0, ended=True)
    assert (done.percent, done.seconds_left, done.elapsed_s) == (100, None, 40.0)
    assert position(done.fields()) == ["step 16/16 (100%)"]
    assert timing(done.fields()) == ["40s elapsed"]
    # at its last step and still running (saving): nothing left to train
    assert seconds_left(_times((15, 15.0), (16, 16.0)), 16, ended=False) == 0.0


def test_a_run_past_its_planned_steps_has_no_time_left() -> None:
    past = progress(18, 16, logged=_times((17, 17.0), (18, 18.0)), elapsed_s=20.0,
                    ended=False)
    assert past.seconds_left is None and past.past_plan and past.percent == 100
    fields = past.fields()
    assert step_text(fields) == "18/16 (past the plan)"
    assert left_text(fields) == "-"
    assert not Progress(16, 16).past_plan and Progress(16, 16).fields()["past_plan"] is None


def test_the_launchers_step_times_come_before_the_runs_average_pace() -> None:
    """The bar's clock excludes the minute of model loading the run's elapsed time holds."""
    logged = _times((2, 2.0), (3, 3.0), (4, 4.0))
    p = progress(4, 14, logged=logged, elapsed_s=64.0, ended=False)
    assert p.seconds_left == 10.0  # 10 steps at 1 s (the run's average would say 160 s)
    # logged times of an earlier step (the last step came without a bar): the run's pace
    p = progress(5, 14, logged=logged, elapsed_s=50.0, ended=False)
    assert p.seconds_left == 90.0
    # no start time either: the reader's own clock while following
    p = progress(5, 14, logged=[], elapsed_s=None, ended=False,
                 observed=_times((3, 100.0), (5, 104.0)))
    assert p.seconds_left == 18.0
    assert progress(None, 14, logged=[], elapsed_s=3.0, ended=False).percent is None


def test_the_words_are_drawn_from_the_fields() -> None:
    fields = Progress(3, 16, 12.0, 65.0).fields()
    assert fields == {"step": 3, "total_steps": 16, "percent": 18, "past_plan": None,
                      "elapsed_s": 12.0, "seconds_left": 65.0}
    assert position(fields) == ["step 3/16 (18%)"]
    assert timing(fields) == ["12s elapsed", "1m 05s left"]
    assert step_text({"step": 3}) == "3" and step_text({}) == ""
    assert step_text({"total_steps": 16}) == "-/16" and position({"total_steps": 16}) == []
    assert left_text(fields) == "1m 05s"


# The Hugging Face trainer's stderr as a local run's log holds it: each step's bar, then the
# record on its own fragment (``\r``-separated), an evaluation bar in between.
HF_LOG = ("\r  0%|          | 0/8 [00:00<?, ?it/s]"
          + "".join(f"\r {i * 12}%|█         | {i}/8 [00:{2 * i:02d}<00:10,  2.00s/it]"
                    f"\r                    \r{{'loss': '{5 - i / 10}', 'learning_rate': "
                    f"'0.01', 'epoch': '{i / 8}'}}\n"
                    + ("\r  0%|          | 0/4 [00:00<?, ?it/s]\r 100%|█| 4/4 [00:09<00:00]"
                       "\r{'eval_loss': '4.5', 'epoch': '0.375'}\n" if i == 3 else "")
                    for i in range(1, 6)))


def test_tracker_times_steps_by_the_trainers_bar_and_reads_its_total() -> None:
    bar = parse_bar("\r 12%|█   | 2/16 [01:02:03<00:10,  1.01it/s]")
    assert bar is not None and (bar.n, bar.of, bar.elapsed_s) == (2, 16, 3723.0)
    tracker = track_text(HF_LOG)  # no total from the compiled job
    assert [p.step for p in tracker.points] == [1, 2, 3, 4, 5]
    assert [(t.step, t.at) for t in tracker.logged_times()] == [
        (1, 2.0), (2, 4.0), (3, 6.0), (4, 8.0), (5, 10.0)]  # the eval bar is not a step's
    assert tracker.planned_total() == 8  # the trainer's bar counts the run's steps
    event = tracker.event()
    assert (event["total_steps"], event["percent"], event["seconds_left"]) == (8, 62, 6.0)
    assert progress_line(event).startswith("step 5/8 (62%) · epoch 0.625 · loss 4.5000")
    assert progress_line(event).endswith(" · 6s left")
    assert track_text(HF_LOG, total_steps=10).planned_total() == 10  # the job's first
    # the trainer's bar turned off (disable_tqdm): the model loading's bar is no total
    loading = "Loading weights: 100%|██████████| 21/21 [00:00<00:00, 7685.23it/s]\n"
    first = next(x for x in HF_LOG.split("\r") if x.startswith("{'loss'"))
    assert track_text(loading + first).planned_total() is None


def _record_before_bar(step: int) -> list[str]:
    """HF_LOG's fragments with step ``step``'s record moved before that step's bar."""
    fragments = HF_LOG.split("\r")
    bar = next(i for i, f in enumerate(fragments) if f"| {step}/8 [" in f)
    record = next(i for i in range(bar, len(fragments)) if fragments[i].startswith("{'loss'"))
    return fragments[:bar] + [fragments[record], fragments[bar]] + fragments[bar + 1:record] \
        + fragments[record + 1:]


def _followed(fragments: list[str]) -> tuple[Tracker, list[str]]:
    """A tracker fed one fragment at a time, and the position of each line it printed."""
    tracker, lines = Tracker(), []
    for fragment in fragments:
        if tracker.feed([fragment]):
            lines.append(progress_line(tracker.event()).split(" · ")[0])
    return tracker, lines


EIGHTHS = [f"step {i}/8 ({100 * i // 8}%)" for i in range(1, 6)]


def test_the_bars_total_holds_for_a_step_whose_record_came_before_its_bar() -> None:
    """The trainer writes its bar and its records on two streams: in the log a step's record
    may come before that step's bar. The total the bar gave stays (it flickered: that step's
    line lost its /8 and percent)."""
    swapped = _record_before_bar(3)
    tracker = track_text("\r".join(swapped))
    assert [p.step for p in tracker.points] == [1, 2, 3, 4, 5]
    assert tracker.points[2].bar is None  # its bar came after it
    assert tracker.planned_total() == 8
    assert _followed(swapped)[1] == EIGHTHS


def test_the_first_steps_record_before_its_bar_takes_the_total_from_the_bar_at_zero() -> None:
    """The trainer's bar may not yet show step 1 when step 1's record is written (tqdm draws
    at most every 0.1 s): the bar before it stands at ``0/8``. Its total counts (before, the
    first line had no /8 and percent); its clock is not step 1's time."""
    swapped = _record_before_bar(1)
    assert "| 0/8 [" in swapped[1] and swapped[2].startswith("{'loss'")  # the bar at 0 first
    following, lines = _followed(swapped)
    assert lines == EIGHTHS
    assert following.points[0].bar is None  # the 0/8 bar is not step 1's time
    assert [t.step for t in following.logged_times()] == [2, 3, 4, 5]
    # a bar past the step counted gives no total: it is not the training bar
    assert track_text("\r 25%|█  | 2/8 [00:04<00:10]\r{'loss': '4.9', 'epoch': '0.5'}\n",
                      ).planned_total() is None


def test_torchtune_bars_restart_each_epoch_and_count_only_the_epoch() -> None:
    """torchtune draws a bar per epoch (its clock from zero again): the pace is the
    current bar's, and its count is no total."""
    log = "".join(
        f"{epoch}|{step}|Loss: 5.0:  50%|█ | {n}/4 [00:{(10 if epoch == 1 else 3) * n:02d}<00:09]"
        f"\rStep {step} | loss:5.0 lr:0.01 \n"
        for epoch in (1, 2) for n in range(1, 5) for step in [(epoch - 1) * 4 + n])
    tracker = track_text(log)
    assert tracker.planned_total() is None  # the step records carry steps: no bar total
    assert [(t.step, t.at) for t in tracker.logged_times()] == [
        (5, 3.0), (6, 6.0), (7, 9.0), (8, 12.0)]
    tracker = track_text(log.rsplit("2|8|", 1)[0], total_steps=8)
    assert tracker.progress().seconds_left == 3.0  # 3 s a step in epoch 2, not 10


def test_a_log_followed_and_a_log_read_at_once_give_the_same_time_left() -> None:
    clock = itertools.count(0.0, 0.001)  # the reader's clock: nothing like the run's
    following = Tracker(total_steps=8, clock=lambda: next(clock))
    for fragment in HF_LOG.replace("\r", "\n").splitlines():
        following.feed([fragment])
    at_once = track_text(HF_LOG, total_steps=8)
    assert following.event()["seconds_left"] == at_once.progress().seconds_left == 6.0


def test_list_says_the_same_words_as_status() -> None:
    from ftspec.cli.render_list import render_rows
    from ftspec.reconciler.inventory import RunRow

    running = RunRow("tiny", "local", "Running", "local", step=3, total_steps=16,
                     seconds_left=65.0).to_json(now=0.0)
    past = RunRow("long", "local", "Running", "local", step=18, total_steps=16).to_json(now=0.0)
    assert (running["percent"], past["percent"]) == (18, 100)
    table = render_rows([running, past]).splitlines()
    assert table[0].split()[4:6] == ["STEP", "LEFT"]
    assert "  3/16 (18%)  " in table[1] and "  1m 05s  " in table[1]
    assert "  18/16 (past the plan)  -  " in table[2]
