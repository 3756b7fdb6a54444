"""The field contract, proven from the JSON Schema: for every leaf field x every target,
moving the field off its default changes the compiled artifacts or yields a located
diagnostic (helpers/contract.py has the generator and the outcome rules).

Figures for a report: ``cd tests && python -m helpers.contract``.
"""

from __future__ import annotations

import pytest
from ftspec.targets import LAUNCHERS, TARGET_NAMES
from ftspec.targets.contract import NOT_IN_ARTIFACTS, SECTIONS, launcher_gaps
from helpers.contract import (
    ITEM,
    MORE_VALUES,
    NOT_VARIED,
    TARGET_BASES,
    VALUES,
    leaves,
    matrix,
    outcome,
    run,
)

LEAF_PATHS = {leaf.path for leaf in leaves()}


def test_every_target_has_a_clean_base() -> None:
    assert set(TARGET_BASES) == set(TARGET_NAMES)
    for target in TARGET_BASES:
        from helpers.contract import base_doc

        result = run(base_doc(target, ()), target)
        assert result.ok and result.artifacts, (target, sorted(result.diagnostics))


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGET_BASES))
def test_no_field_is_dropped_silently(target: str) -> None:
    silent = []
    for _, leaf, value in matrix((target,)):
        result, detail = outcome(target, leaf, value)
        if result in ("silent", "unproven"):
            silent.append(f"{result}: {'.'.join(leaf.path)} = {detail}")
    assert not silent, (f"{target} drops these fields without a word (or the generator "
                        "varies them into an unrelated error):\n" + "\n".join(silent))


def test_tables_name_real_fields() -> None:
    """Every path the contract and the generator name is a schema leaf or section."""
    def known(path: tuple[str, ...]) -> bool:
        mapped = tuple(ITEM if p == "*" else str(p) for p in path)
        return any(leaf[: len(mapped)] == mapped for leaf in LEAF_PATHS)

    named = [*SECTIONS, *NOT_IN_ARTIFACTS, *VALUES, *NOT_VARIED, *MORE_VALUES,
             *(gap.path for name in LAUNCHERS for gap in launcher_gaps(name))]
    assert [p for p in named if not known(tuple(map(str, p)))] == []
    assert {p for p, v in VALUES.items() if v is None} == set(NOT_VARIED)


def test_a_dropped_field_would_be_caught() -> None:
    """The generator is not blind: with the torchtune gap for push_to_hub removed, the
    field is reported as silent."""
    from ftspec.targets import contract
    from helpers.contract import _run

    leaf = next(leaf for leaf in leaves() if leaf.path == ("output", "push_to_hub"))
    kept = contract.launcher_gaps("torchtune")
    contract.GAPS["torchtune"] = tuple(g for g in kept if g.path != leaf.path)
    _run.cache_clear()
    try:
        assert outcome("torchtune", leaf)[0] == "silent"
    finally:
        contract.GAPS["torchtune"] = kept
        _run.cache_clear()
    assert outcome("torchtune", leaf)[0] == "diagnosed"


def test_an_unrelated_error_proves_nothing() -> None:
    """Only a diagnostic about the leaf counts: method.kind moved to ``full`` under the
    base's LoRA settings fails on ``method.lora`` (settings for another method), which says
    nothing about whether the target honours method.kind."""
    from helpers import contract
    from helpers.contract import _run

    leaf = next(leaf for leaf in leaves() if leaf.path == ("method", "kind"))
    kept = contract.VALUES[leaf.path]
    contract.VALUES[leaf.path] = "full"
    try:
        result, detail = outcome("kubeflow", leaf)
        expected = "unrelated error rule.lora-without-lora@method.lora"
        assert (result, detail) == ("unproven", expected)
    finally:
        contract.VALUES[leaf.path] = kept
        _run.cache_clear()
    assert outcome("kubeflow", leaf)[0] == "changed"


@pytest.mark.parametrize("target", list(TARGET_BASES))
def test_every_precision_mode_is_honoured_or_refused(target: str) -> None:
    """``model.precision: autocast`` (a further value, ``MORE_VALUES``) is proven like the
    generated one: the accelerate-based targets change their artifacts, torchtune's refuse
    at the field."""
    leaf = next(leaf for leaf in leaves() if leaf.path == ("model", "precision"))
    result, detail = outcome(target, leaf, "autocast")
    tune = target in ("torchtune", "kubeflow", "kuberay", "ray")  # the base's launcher
    refused = ("diagnosed", "error target.torchtune.precision-autocast@model.precision")
    assert (result, detail) == (refused if tune else ("changed", ""))



@pytest.mark.parametrize("target", list(TARGET_BASES))
def test_fp16_autocast_is_honoured_for_lora_and_refused_for_a_full_fine_tune(
        target: str) -> None:
    """fp16 LoRA (the base's method) moved from mixed (fp16's default) to autocast: the
    accelerate-based targets change their artifacts (fp16 weights instead of fp32 ones),
    torchtune's refuse fp16 at model.dtype whatever the mode; a full fine-tune's autocast
    over fp16 weights is refused at model.precision on every target (the GradScaler)."""
    from helpers.contract import base_doc
    from helpers.jobs import merge

    leaf = ("model", "precision")
    fp16 = merge(base_doc(target, leaf), {"model": {"dtype": "fp16"}})
    mixed, autocast = run(fp16, target), run(merge(fp16, {"model": {"precision": "autocast"}}),
                                             target)
    if target in ("torchtune", "kubeflow", "kuberay", "ray"):  # the base's launcher
        refused = ("error", "target.torchtune.fp16", ("model", "dtype"))
        assert not mixed.ok and refused in mixed.diagnostics
        assert not autocast.ok and refused in autocast.diagnostics
    else:
        assert mixed.ok and autocast.ok and mixed.artifacts != autocast.artifacts
    full = run(merge(fp16, {"model": {"precision": "autocast"},
                            "method": {"kind": "full", "lora": None}}), target)
    assert not full.ok
    assert ("error", "rule.precision-autocast-fp16", leaf) in full.diagnostics
