"""A run that exited 0 but trained fewer steps than planned is invalid (``failure.short_run``),
counted from its log (``measured.trained_steps``); a stop rule may end a run sooner."""

from __future__ import annotations

from pathlib import Path

from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.reconciler.applied import RECORD_KEY, applied_summary, encode, record_of
from ftspec.reconciler.failure import describe, short_run
from ftspec.reconciler.inventory import _validity
from ftspec.reconciler.measured import short_of_plan, trained_steps
from ftspec.reconciler.progress import track_text

REPO = Path(__file__).resolve().parents[2]
TWO_OF_FOUR = (
    "  0%|          | 0/4 [00:00<?, ?it/s]\r1|1|Loss: 5.7:  25%|#    | 1/4 [00:01<00:03, 1.0s/it]"
    "Step 1 | loss:5.7 lr:0.01\n"
    "1|2|Loss: 5.1:  50%|#####     | 2/4 [00:02<00:02, 1.0s/it]Step 2 | loss:5.1 lr:0.01\n"
)
ZERO_STEPS = "  0%|          | 0/0 [00:00<?, ?it/s]\n0it [00:00, ?it/s]\nINFO:Saving adapter\n"
HF_EVERY_5 = (
    "{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 0.001, 'epoch': 0.5}\n"
    " 70%|#######   | 7/10 [00:07<00:03,  1.00it/s]\n"
)


def test_no_step_trained_is_invalid() -> None:
    tracker = track_text(ZERO_STEPS)
    assert trained_steps(ZERO_STEPS, tracker) == (0, True)
    why = short_run(0, 1, stop_rule=False)
    assert why == {"validity": "invalid", "trained": "trained 0 of 1 planned steps"}
    assert describe(why) == "trained 0 of 1 planned steps"


def test_fewer_steps_than_planned_is_invalid_all_steps_is_not() -> None:
    trained, exact = trained_steps(TWO_OF_FOUR, track_text(TWO_OF_FOUR))
    assert (trained, exact) == (2, True)
    assert short_run(trained, 16, stop_rule=False)["trained"] == "trained 2 of 16 planned steps"
    assert short_run(trained, 2, stop_rule=False) == {}
    assert short_run(trained, None, stop_rule=False) == {}  # the plan knew no total


def test_a_stop_rule_may_end_the_run_sooner() -> None:
    assert short_run(2, 16, stop_rule=True) == {}


def test_records_logging_steps_apart_leave_slack() -> None:
    """Without a bar the last record may be up to logging_steps - 1 before the last step."""
    text = "{'loss': 2.5, 'learning_rate': 0.001}\n{'loss': 2.0, 'learning_rate': 0.001}\n"
    tracker = track_text(text, logging_steps=5)
    assert trained_steps(text, tracker) == (10, False)
    assert short_run(10, 14, stop_rule=False, slack=tracker.logging_steps - 1) == {}
    assert short_run(10, 15, stop_rule=False, slack=4)["trained"] == \
        "trained 10 of 15 planned steps"


def test_the_trainers_bar_counts_every_step() -> None:
    tracker = track_text(HF_EVERY_5, logging_steps=5, steps_per_epoch=10)
    assert trained_steps(HF_EVERY_5, tracker) == (7, True)


def test_list_reports_a_short_success_as_invalid() -> None:
    assert _validity("Succeeded", {}) == "ok"
    assert _validity("Succeeded", short_run(0, 1, stop_rule=False)) == "invalid"


def test_the_plan_records_a_stop_rule_in_the_ml_summary() -> None:
    spec = REPO / "examples" / "tiny-local.yaml"
    plain = compile_spec(SpecInput(spec), "identity").job
    stopped = compile_spec(SpecInput(spec, (), ("training.stop.after_seconds=30",)),
                           "identity").job
    assert plain is not None and stopped is not None
    assert "stop rule" not in plain.summary
    assert stopped.summary["stop rule"] == "training.stop"


def test_short_of_plan_reads_the_summary_the_run_was_applied_with() -> None:
    """The rule every backend applies (local records, Ray metadata): the ``max steps`` and
    ``stop rule`` of the applied ML summary."""
    tracker = track_text(TWO_OF_FOUR)
    assert short_of_plan(TWO_OF_FOUR, tracker, {"max steps": "16"}) == \
        {"validity": "invalid", "trained": "trained 2 of 16 planned steps"}
    assert short_of_plan(TWO_OF_FOUR, tracker, {"max steps": "2"}) == {}
    assert short_of_plan(TWO_OF_FOUR, tracker, {"max steps": "-"}) == {}
    assert short_of_plan(TWO_OF_FOUR, tracker, {}) == {}
    assert short_of_plan(TWO_OF_FOUR, tracker,
                         {"max steps": "16", "stop rule": "training.stop"}) == {}


def test_the_applied_summary_comes_from_a_jobs_metadata() -> None:
    job = compile_spec(SpecInput(REPO / "examples" / "tiny-local.yaml"), "identity").job
    assert job is not None
    meta = {RECORD_KEY: encode(record_of(job))}
    assert applied_summary(meta, "ftspec.dev/summary")["max steps"] == "16"
    assert applied_summary({"ftspec.dev/summary": '{"max steps": "7"}'},
                           "ftspec.dev/summary") == {"max steps": "7"}
    assert applied_summary({}, "ftspec.dev/summary") == {}
