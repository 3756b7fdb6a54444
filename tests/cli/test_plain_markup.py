"""Without colour, `plan` prints its markup without importing rich: same bytes as rich."""

from __future__ import annotations

import io

import pytest
from ftspec.cli.output import plain_markup
from ftspec.cli.render_plan import render_plan


def _rich(markup: str) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, no_color=True, highlight=False, soft_wrap=True, emoji=False,
            force_terminal=False).print(markup)
    return buf.getvalue()


SAMPLES = [
    "plain text",
    "[bold]Plan:[/bold] 1 to add",
    r"escaped \[bold] tag and \[0] index",
    r"two backslashes \\[bold]x[/bold] then three \\\[dim]y",
    "[green bold]No changes.[/green bold] a [ b ] c [0] [dim]x[/] ",
    "a \\[ b \\\\[ c [x\\[y] \\",
    "unicode ─── ✓ and emoji :smile: stay",
    "",
    "trailing\n\nlines\n",
]


def _plan(value: str) -> dict[str, object]:
    after = {"apiVersion": "v1", "kind": "TrainJob",
             "metadata": {"name": "j", "labels": {"a[0]": value}},
             "spec": {"args": [value, "[bold]x", "\\[", "k=v"]}}
    return {"format_version": 1, "backend": "kubernetes", "warnings": [f"w [red]{value}"],
            "changes": [
                {"address": f"kubeflow.TrainJob.ns/{value}", "action": "create",
                 "before": None, "after": after},
                {"address": "kubeflow.TrainJob.ns/u", "action": "update", "drift": True,
                 "reason": f"drift [x] {value}", "before": after, "after": after,
                 "fields": [{"path": "spec.args[0]", "before": "[a]", "after": value},
                            {"path": "metadata.labels", "before": None, "after": {"k": "[v]"}}],
                 "ml_changes": [f"learning rate [1e-4] -> {value}"]},
                {"address": "kubeflow.TrainJob.ns/d", "action": "delete", "before": after,
                 "after": None, "reason": "destroy requested"},
            ]}


@pytest.mark.parametrize("markup", SAMPLES)
def test_same_as_rich(markup: str) -> None:
    assert plain_markup(markup) is not None
    assert plain_markup(markup) + "\n" == _rich(markup)


@pytest.mark.parametrize("value", ["x", "[bold]", "a\\[b", "\\\\[dim]", "[/]", "é[#1]@", "\\",
                                   "[x\\[y]"])
def test_rendered_plans_same_as_rich(value: str) -> None:
    markup = render_plan(_plan(value))
    assert plain_markup(markup) + "\n" == _rich(markup)


def test_control_characters_are_left_to_rich() -> None:
    assert plain_markup("a\tb") is None
    assert plain_markup("a\rb") is None
