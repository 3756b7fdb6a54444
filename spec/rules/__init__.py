"""Semantic rules: checks JSON Schema cannot express, each pointing at the key at fault.

A rule is a function ``(spec) -> Iterable[Diagnostic]`` whose diagnostics carry a key path
but no span; the validation pipeline attaches the position from the source map. Add a rule
by writing it in the module of its topic and listing it in ``RULES``; where the Job (the IR)
cannot be derived from a spec its error names, list the error's code in ``PREREQUISITES`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules import (
    addresses,
    batch,
    combos,
    data,
    hardware,
    inert,
    method,
    naming,
    sweep,
    training,
)

Rule = Callable[[FineTuneSpec], Iterable[Diagnostic]]

RULES: tuple[Rule, ...] = (
    naming.name_is_valid_for_target,
    addresses.ray_address_is_usable,
    batch.batch_arithmetic,
    hardware.gpus_divisible_by_nodes,
    hardware.accelerator_required,
    hardware.bf16_supported,
    hardware.precision_coherent,
    hardware.expert_parallel,
    hardware.flash_attention_supported,
    method.settings_match_method,
    method.lora_targets_reachable,
    data.train_or_mixture,
    data.mixture_proportions,
    data.templates_exclusive,
    data.packing_needs_length,
    data.evaluation_data,
    data.loader_known,
    training.duration,
    training.warmup,
    training.step_strategies,
    training.stop_rule,
    combos.family_or_architecture,
    combos.strategy_settings,
    combos.fsdp_layer_class,
    combos.target_supports_spec,
    inert.inert_settings,
    sweep.grid_is_valid,
)


PREREQUISITES = frozenset(f"rule.{code}" for code in (
    "model-family", "model-both",             # the model's facts: none, or two to pick from
    "gpus-both", "gpus-divisible",            # the topology: GPUs and processes per node
    "ep-dense", "ep-experts", "ep-divisible",  # how the experts split over the processes
    "data-both",                              # which data trains: data.train or the mixture
    "packed-length",                          # the length packing fills (memory, tokens)
    "duration",                               # the schedule: total steps, warm-up from a ratio
))
"""Codes of rule errors that leave ``compiler.build.build_job`` nothing, or two things to pick
from, to derive a Job value from (the model's numbers, the world size, the experts' split, the
training data, the packed length, the schedule): with one of these, ``compile`` stops at validation, since a
target's check of that Job would crash or speak of values the user never gave. With any other
error the Job is still derived, and the launcher's and the deploy target's checks run and
list their errors beside the rules' (they take nothing the other rules guarantee for granted:
``tests/compiler/test_all_errors.py`` compiles specs with such errors for every target)."""


def run_rules(spec: FineTuneSpec) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for rule in RULES:
        found.extend(rule(spec))
    return found
