"""One run lists every error: the spec's validation errors and, whenever the Job can still be
derived, the launcher's and the deploy target's — each located, each once, in a stable order.
Where a rule error leaves nothing to derive the Job from (``spec.rules.PREREQUISITES``), the
target's checks do not run: only the rule error, no crash."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.cli.main import main
from ftspec.compiler.pipeline import (
    SAME_MEANING,
    CompileOptions,
    SpecInput,
    Stage,
    compile_spec,
    merged,
)
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.rules import PREREQUISITES
from ftspec.targets import TARGET_NAMES

INVALID = Path(__file__).resolve().parents[1] / "invalid"

BASE: dict[str, Any] = {
    "apiVersion": "ftspec.dev/v1alpha1",
    "kind": "FineTune",
    "metadata": {"name": "all-errors"},
    "model": {"uri": "hf://meta-llama/Llama-3.2-1B-Instruct", "family": "llama3_2-1b"},
    "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "format": "alpaca"},
             "max_seq_len": 512},
    "method": {"kind": "lora", "lora": {"rank": 8, "alpha": 16}},
    "training": {"epochs": 1, "global_batch_size": 8, "micro_batch_size": 2,
                 "learning_rate": 2.0e-4},
    "resources": {"gpus_per_node": 1, "accelerator": "nvidia-a100-80gb"},
    "output": {"uri": "pvc://ft-outputs/all-errors"},
    "launcher": "torchtune",
}


def _spec(tmp_path: Path, changes: dict[str, Any], drop: tuple[tuple[str, ...], ...] = ()
          ) -> Path:
    """BASE with ``changes`` (dotted path -> value) laid over it and ``drop`` removed."""
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    for keys in drop:
        node = data
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    return spec


def _line(spec: Path, start: str) -> int:
    """The line of the first line that starts with ``start`` (indentation aside)."""
    return next(i for i, text in enumerate(spec.read_text().splitlines(), 1)
                if text.strip().startswith(start))


def _codes(diags: tuple[Diagnostic, ...] | list[Diagnostic]) -> list[str]:
    return [d.code or "" for d in diags if d.is_error]


# accelerate on kubeflow with no runtime and a local output: the kubeflow target's errors;
# a name that is no RFC 1035 label: a rule's error, which says nothing about the target
MIXED = {"metadata.name": "All_Errors", "launcher": "accelerate", "deploy.target": "kubeflow",
         "output.uri": "file://out"}


def test_a_rule_error_and_the_target_errors_are_listed_in_one_run(tmp_path: Path) -> None:
    spec = _spec(tmp_path, MIXED)
    result = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target="kubeflow"))
    codes = _codes(result.diagnostics)
    assert "rule.name-format" in codes
    assert {"kubeflow.runtime-required", "kubeflow.uri-scheme"} <= set(codes), codes
    assert not result.ok and result.artifacts == ()
    for d in result.errors:  # each located in the spec
        assert d.span is not None and d.span.file == str(spec), d
    at = {d.code: d.span.line for d in result.errors if d.span is not None}
    assert at["rule.name-format"] == _line(spec, "name:")
    assert at["kubeflow.uri-scheme"] == _line(spec, "uri: file://out")
    assert len(codes) == len({(d.code, d.path) for d in result.errors})  # each once
    spans = [(d.span.line, d.span.col) for d in result.diagnostics if d.span is not None]
    assert spans == sorted(spans)  # in the file's order
    again = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target="kubeflow"))
    assert again.diagnostics == result.diagnostics  # stable


def test_validate_lists_both_with_the_same_exit_code_and_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, MIXED)
    assert main(["validate", str(spec), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"valid", "files"} and report["valid"] is False
    [entry] = report["files"]
    assert set(entry) == {"file", "valid", "skipped", "diagnostics"}
    codes = [d["code"] for d in entry["diagnostics"] if d["severity"] == "error"]
    assert "rule.name-format" in codes and "kubeflow.runtime-required" in codes
    assert main(["compile", str(spec), "--target", "kubeflow"]) == 1
    text = capsys.readouterr().err
    assert "not an RFC 1035 label" in text and "needs a runtime that runs accelerate" in text


def test_plan_lists_both_before_reading_anything_live(tmp_path: Path) -> None:
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.desired import prepare

    prepared = prepare([SpecInput(_spec(tmp_path, MIXED))], BackendOptions())
    assert prepared.backend is None and not prepared.ok
    codes = _codes(list(prepared.diagnostics))
    assert "rule.name-format" in codes and "kubeflow.runtime-required" in codes
    # destroy / status / logs need only the identity: the validation errors
    only = prepare([SpecInput(_spec(tmp_path, MIXED))], BackendOptions(), identity_only=True)
    assert _codes(list(only.diagnostics)) == ["rule.name-format"]


def test_no_model_family_stops_at_the_rule(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """No family and no architecture: no torchtune config to look up, no memory to estimate;
    the rule's error alone, for every target, and no Job."""
    spec = _spec(tmp_path, {"model.uri": "hf://someone/unknown-model"}, drop=(("model", "family"),))
    for target in TARGET_NAMES:
        result = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target=target))
        assert _codes(result.diagnostics) == ["rule.model-family"], (target, result.diagnostics)
        assert result.job is None
    assert main(["validate", str(spec)]) == 1
    out = capsys.readouterr()
    assert "give model.family" in out.out and "Traceback" not in out.out + out.err


Case = tuple[dict[str, Any], tuple[tuple[str, ...], ...]]
"""BASE's changes (dotted path -> value) and removed keys."""

PREREQUISITE_CASES: dict[str, Case] = {
    "rule.model-family": ({}, (("model", "family"),)),
    "rule.model-both": ({"model.architecture": {
        "num_layers": 2, "num_heads": 4, "num_kv_heads": 4, "embed_dim": 64,
        "intermediate_dim": 128, "vocab_size": 320, "max_seq_len": 512}}, ()),
    "rule.gpus-both": ({"resources.gpus": 2, "resources.gpus_per_node": 2}, ()),
    "rule.gpus-divisible": ({"resources.gpus": 3, "resources.nodes": 2},
                            (("resources", "gpus_per_node"),)),
    "rule.ep-dense": ({"distributed.expert_parallel": 2, "resources.gpus_per_node": 2}, ()),
    "rule.ep-experts": ({"model.family": "mixtral-8x7b", "distributed.expert_parallel": 3,
                         "resources.gpus_per_node": 3, "training.global_batch_size": 6}, ()),
    "rule.ep-divisible": ({"model.family": "mixtral-8x7b", "distributed.expert_parallel": 4,
                           "resources.gpus_per_node": 2}, ()),
    "rule.data-both": ({"data.mixture": {"datasets": [
        {"uri": "hf://tatsu-lab/alpaca", "format": "alpaca", "proportion": 0.5},
        {"uri": "hf://yahma/alpaca-cleaned", "format": "alpaca", "proportion": 0.5}]}}, ()),
    "rule.duration": ({"training.epochs": None}, ()),
    "rule.packed-length": ({"data.packed": True, "data.max_seq_len": None}, ()),
}
"""A spec for each rule error the Job rests on."""

TOLERATED_CASES: dict[str, Case] = {
    "rule.accelerator-required": ({}, (("resources", "accelerator"),)),
    "rule.data-missing": ({}, (("data", "train"),)),
    "rule.proportion-missing": ({"data.mixture": {"datasets": [
        {"uri": "hf://tatsu-lab/alpaca", "format": "alpaca"},
        {"uri": "hf://yahma/alpaca-cleaned", "format": "alpaca", "proportion": 0.5}]}},
        (("data", "train"),)),
    "rule.completion-prompt": ({"data.train.format": "completion"}, ()),
    "rule.quantization-required": ({"method.kind": "qlora"}, ()),
    "rule.precision-mixed-fp32": ({"model.precision": "mixed", "model.dtype": "fp32"}, ()),
    "rule.steps-missing": ({"training.checkpointing.strategy": "steps"}, ()),
}
"""Rule errors that leave a value the targets read unset or odd, which their checks take in
their stride: the Job is derived and every target's checks run beside the rule."""


def test_every_prerequisite_has_a_case() -> None:
    assert set(PREREQUISITE_CASES) == PREREQUISITES
    assert not set(TOLERATED_CASES) & PREREQUISITES


@pytest.mark.parametrize("code", sorted(PREREQUISITE_CASES))
def test_a_prerequisite_error_runs_no_target_check(code: str, tmp_path: Path) -> None:
    changes, drop = PREREQUISITE_CASES[code]
    spec = _spec(tmp_path, changes, drop)
    alone = compile_spec(SpecInput(spec), "identity")
    assert code in _codes(alone.diagnostics), alone.diagnostics
    assert alone.job is None
    for target in TARGET_NAMES:
        result = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target=target))
        assert result.diagnostics == alone.diagnostics, target  # nothing of the target's
    assert compile_spec(SpecInput(spec), "checks").diagnostics == alone.diagnostics


@pytest.mark.parametrize("code", sorted(TOLERATED_CASES))
def test_any_other_rule_error_leaves_the_target_checks_to_run(code: str,
                                                               tmp_path: Path) -> None:
    changes, drop = TOLERATED_CASES[code]
    spec = _spec(tmp_path, changes, drop)
    alone = compile_spec(SpecInput(spec), "identity")
    assert code in _codes(alone.diagnostics) and alone.job is not None
    for target in TARGET_NAMES:
        result = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target=target))
        assert result.target == target and code in _codes(result.diagnostics), target
        assert set(alone.diagnostics) <= set(result.diagnostics), target
        assert result.artifacts == ()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in INVALID.glob("*.yaml")))
def test_every_invalid_case_compiles_for_every_target_without_a_crash(name: str) -> None:
    """compile_spec never raises for bad input, whatever the target the rule errors leave
    to check (a case may be invalid for its own deploy target only); every error it lists
    with a key path is placed."""
    for target in TARGET_NAMES:
        result = compile_spec(SpecInput(INVALID / f"{name}.yaml"), "artifacts",
                              CompileOptions(target=target))
        assert all(d.span is not None for d in result.errors if d.path), target


def _diag(code: str, path: tuple[str, ...], summary: str = "s") -> Diagnostic:
    return Diagnostic(Severity.ERROR, summary, path=path, code=code)


def test_a_target_finding_replaces_the_rule_finding_it_says_more_exactly() -> None:
    uri = ("data", "train", "uri")
    rule = _diag("rule.remote-file-uri", uri, "cannot read local files")
    other = _diag("rule.name-format", ("metadata", "name"))
    exact = _diag("kuberay.uri-scheme", uri, "reads hf:// and pvc://")
    elsewhere = _diag("kuberay.uri-scheme", ("output", "uri"))
    assert merged([rule, other], [exact, exact, elsewhere]) == [exact, other, elsewhere]
    # a finding at the same path that means something else stays beside the rule's
    moot = _diag("target.torchtune.dataset-template", ("data", "train", "prompt_func"))
    exclusive = _diag("rule.prompt-exclusive", ("data", "train", "prompt_func"))
    assert merged([exclusive], [moot]) == [exclusive, moot]
    assert all(code.startswith("rule.") for codes in SAME_MEANING.values() for code in codes)


SAID_MORE_EXACTLY: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "kubeflow.initializer-uri": ("rule.remote-file-uri", ("data", "train", "uri"), {
        "deploy.target": "kubeflow", "data.train.uri": "file://data/train.jsonl"}),
    "kuberay.uri-scheme": ("rule.remote-file-uri", ("data", "train", "uri"), {
        "deploy.target": "kuberay", "data.train.uri": "file://data/train.jsonl"}),
    "kuberay.name-length": ("rule.name-length", ("metadata", "name"), {
        "deploy.target": "kuberay", "metadata.name": "a" * 64}),
    "kubeflow.name-length": ("rule.name-length", ("metadata", "name"), {
        "deploy.target": "kubeflow", "metadata.name": "a" * 64}),
    "target.torchtune.strategy": ("rule.strategy-none", ("distributed", "strategy"), {
        "distributed.strategy": "none", "resources.gpus_per_node": 2}),
}
"""Each entry of SAME_MEANING: (the rule's code, the path, BASE's changes that raise both)."""


def test_every_same_meaning_entry_has_a_case() -> None:
    assert set(SAID_MORE_EXACTLY) == set(SAME_MEANING)
    assert all(rule in SAME_MEANING[code] for code, (rule, _, _) in SAID_MORE_EXACTLY.items())


@pytest.mark.parametrize("code", sorted(SAID_MORE_EXACTLY))
def test_the_target_finding_is_listed_instead_of_the_rule_finding(code: str,
                                                                   tmp_path: Path) -> None:
    rule, path, changes = SAID_MORE_EXACTLY[code]
    spec = _spec(tmp_path, changes)
    alone = compile_spec(SpecInput(spec), "identity")
    assert (rule, path) in {(d.code, d.path) for d in alone.errors}
    stages: tuple[Stage, ...] = ("checks", "artifacts")
    for stage in stages:
        result = compile_spec(SpecInput(spec), stage)
        at = [d.code for d in result.errors if d.path == path]
        assert at == [code], (stage, at)
