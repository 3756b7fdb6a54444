"""`output --compare`'s data and table, from hand-written rows (pure: no backend, no run)."""

from __future__ import annotations

from ftspec.cli.render_compare import render_comparison
from ftspec.reconciler.comparison import Comparison, PointRow, differing
from rich.text import Text

OK = {"validity": "ok", "train_runtime_s": 12.0, "dataset_tokens_per_second": 100.0,
      "dataset_tokens_per_second_per_device": 50.0,
      "peak_memory": {"kind": "cuda max allocated", "bytes": 3 * 2**30}}


def _row(name: str, lr: float, rank: int, phase: str, loss: float | None,
         measured: dict[str, object]) -> PointRow:
    metrics = {"steps": 16, "total_steps": 16} | ({"train_loss": loss} if loss else {})
    return PointRow(name, f"ray.job.{name}", phase,
                    {"training.learning_rate": lr, "method.lora.rank": rank,
                     "training.seed": 1}, metrics, measured)


def test_only_the_fields_that_differ_are_columns_and_the_best_is_a_valid_success() -> None:
    table = Comparison("s.yaml", (
        _row("s-a", 1e-4, 8, "Succeeded", 2.5, OK),
        _row("s-b", 3e-4, 8, "Failed", 0.5, {"validity": "invalid"}),  # OOM: never best
        _row("s-c", 3e-4, 16, "Succeeded", 1.25, OK),
        _row("s-d", 1e-4, 16, "Running", None, {})))
    data = table.to_json()
    assert data["fields"] == ["training.learning_rate", "method.lora.rank"]
    assert data["best"] == "s-c"
    lines = Text.from_markup(render_comparison(data)).plain.splitlines()
    assert lines[0] == "Sweep of s.yaml: 4 points"
    assert lines[2].split()[:3] == ["NAME", "training.learning_rate", "method.lora.rank"]
    assert lines[3].split() == ["s-a", "0.0001", "8", "Succeeded", "16/16", "2.5000", "12.0s",
                                "100.0", "50.0", "3072", "MiB", "ok"]
    assert lines[4].split() == ["s-b", "0.0003", "8", "Failed", "16/16", "0.5000", "invalid"]
    assert lines[6].split() == ["s-d", "0.0001", "16", "Running", "16/16"]
    assert lines[-1] == "Lowest final loss: s-c (1.2500)"


def test_differing_keeps_grid_order_and_tells_types_apart() -> None:
    assert differing([{"a": 1, "b": True}, {"a": 1, "b": 1}]) == ["b"]
    assert differing([{"x": [1], "y": "k"}, {"x": [2], "y": "k"}]) == ["x"]
    assert differing([]) == []


def test_points_that_trained_at_the_same_time_are_named_and_their_rates_marked() -> None:
    from dataclasses import replace

    from ftspec.reconciler.comparison import overlaps, span_of

    # a and b overlap; c started exactly as b ended (one at a time); d never ran
    spans = [("s-a", (0.0, 10.0)), ("s-b", (5.0, 20.0)), ("s-c", (20.0, 30.0)), ("s-d", None)]
    assert overlaps(spans) == [("s-b",), ("s-a",), (), None]
    # a queued point that has not started has trained at no time; a running one until now
    assert span_of({"started_at": 1.0, "queued": {"position": 1}, "run_started_at": None},
                   now=9.0) is None
    assert span_of({"started_at": 1.0, "run_started_at": 4.0, "ended_at": None},
                   now=9.0) == (4.0, 9.0)
    assert span_of({"exists": True}, now=9.0) is None  # a backend that does not say

    rows = (replace(_row("s-a", 1e-4, 8, "Succeeded", 2.5, OK), ran_with=("s-b",)),
            replace(_row("s-b", 3e-4, 8, "Succeeded", 2.0, OK), ran_with=("s-a",)),
            replace(_row("s-c", 1e-3, 8, "Succeeded", 1.5, OK), ran_with=()))
    data = Comparison("s.yaml", rows).to_json()
    assert [p["ran_with"] for p in data["points"]] == [["s-b"], ["s-a"], []]
    lines = Text.from_markup(render_comparison(data)).plain.splitlines()
    assert lines[3].split()[4:8] == ["2.5000", "12.0s*", "100.0*", "50.0*"]
    assert lines[5].split()[4:8] == ["1.5000", "12.0s", "100.0", "50.0"]
    assert lines[-3] == ("* measured while other points of the sweep trained on the same "
                         "machine (s-a, s-b): RUNTIME and TOKENS/S include the contention; "
                         "sweep.max_parallel: 1 runs the points one at a time")


def test_points_never_applied_say_so_instead_of_an_unknown_phase() -> None:
    """Before, ``--compare`` before any apply showed each point's phase as ``Unknown``."""
    from dataclasses import replace

    rows = tuple(replace(_row(f"s-{x}", lr, 8, "Unknown", None, {}), metrics={}, applied=False)
                 for x, lr in (("a", 1e-4), ("b", 3e-4)))
    data = Comparison("s.yaml", rows).to_json()
    assert [p["applied"] for p in data["points"]] == [False, False]
    lines = Text.from_markup(render_comparison(data)).plain.splitlines()
    assert lines[3].split() == ["s-a", "0.0001", "not", "applied"]
    assert lines[-1] == "No point of this sweep has run yet: `ftspec apply s.yaml` starts them."
    # one point applied: the others are not applied, and no line says none ran
    mixed = Comparison("s.yaml", (replace(rows[0], applied=True, phase="Succeeded"), rows[1]))
    lines = Text.from_markup(render_comparison(mixed.to_json())).plain.splitlines()
    assert lines[3].split()[2] == "Succeeded" and lines[4].split()[2:] == ["not", "applied"]
    assert not lines[-1].startswith("No point")
