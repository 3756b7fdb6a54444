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
    "model-family", "model-both",             # the model's facts (layers, sizes, configs)
    "gpus-both", "gpus-divisible",            # the topology: GPUs and processes per node
    "accelerator-required",                   # the memory to fit and the resources to ask
    "ep-dense", "ep-experts", "ep-divisible",  # how the experts split over the processes
    "data-missing", "data-both",              # the training data every target reads
    "proportion-missing",                     # a mixture's weights
    "completion-prompt",                      # a completion dataset's prompt
    "packed-length",                          # the length packing fills
    "duration",                               # epochs or steps: the schedule
    "quantization-required",                  # the quantized base of QLoRA / GPTQ-LoRA
))
"""Codes of rule errors that leave the spec without something ``compiler.build.build_job``
or every target reads (the rules guarantee it to them): with one of these, ``compile`` stops
at validation. With any other error the Job is still derived, so the launcher's and the
deploy target's checks run and their errors are listed with the rules' in one run."""


def run_rules(spec: FineTuneSpec) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for rule in RULES:
        found.extend(rule(spec))
    return found
