"""``ftspec import TOOL FILE --target T``: the imported spec aimed at one target.

An importer writes what the source tool runs (TRL, axolotl, Oumi… run under accelerate). Aimed
at a target, the draft is compiled for it in memory, and each located error the target reports
that the source allows a value for is answered by that value (:data:`FIXES`: a launcher, a
checkpoint cadence, an FSDP version, the Kubeflow runtime…); then it is compiled again, until
no error has an answer. Every change is a warning at the source line whose value it replaces,
saying what will train differently (or that nothing will); the comment beside the new value
says the same. Errors with no answer the source allows stay for ``ftspec compile`` to list
(a model torchtune ships no config for, a Jinja chat template, a schedule or precision torchtune
cannot run, an image, a PersistentVolumeClaim, a W&B key): the import ends with one warning
that counts them.

Nothing here picks a "nearest" value: the model family stays the source's model (torchtune
either ships its config or the error stays); a Jinja chat template is never swapped for a
torchtune template, as no check here proves two templates lay out the same tokens.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, format_path
from ftspec.spec.platforms import DEPLOY_TARGETS, PLATFORMS

LAUNCHER_AIMS = ("torchtune", "accelerate")
"""``--target`` values that are launchers: the spec's ``launcher`` becomes the target."""
PLATFORM_AIMS = tuple(sorted(DEPLOY_TARGETS, key=lambda t: PLATFORMS[t].compile_target is None))
"""``--target`` values that are platforms: the spec's ``deploy.target`` becomes the target
(those with a compile target of their own first, then ``local``)."""
AIMS = LAUNCHER_AIMS + PLATFORM_AIMS
ROUNDS = 4
"""Compile-and-answer rounds (an answer can uncover an error the first compile hid)."""
CODE = "import.aimed"
LEFT = "import.aimed-left"
"""The warning that counts the errors the aim left for ``compile`` to list."""
DROP = object()
"""A :class:`Change` value: the key is removed (the spec's default applies)."""


@dataclass(frozen=True)
class Change:
    """A value the target needs, and what trains differently because of it."""

    path: KeyPath
    value: Any
    why: str
    hint: str | None = None


Answer = Callable[[SpecDraft, Diagnostic], "list[Change]"]


def aim(imported: Imported, targets: tuple[str, ...]) -> Imported:
    """``imported`` aimed at ``targets`` in turn (``--target torchtune --target kubeflow``:
    torchtune's recipe on Kubeflow)."""
    from ftspec.compiler.importers.render import render

    if imported.draft is None or not targets:
        return imported
    draft = SpecDraft(imported.draft.source, imported.draft.args,
                      copy.deepcopy(imported.draft.data), dict(imported.draft.origins),
                      list(imported.draft.warnings), set(imported.draft.consumed),
                      list(imported.draft.inert))
    for target in targets:
        _aim_one(draft, target)
    names = " and ".join(targets)
    head = imported.head + ((f"Aimed at {names} (--target): each value changed for it says "
                             "so in its comment and in a warning at the source line."),)
    return Imported(imported.tool, render(draft, head), draft.data, draft.diagnostics(),
                    draft, head)


def _aim_one(draft: SpecDraft, target: str) -> None:
    start = ("launcher",) if target in LAUNCHER_AIMS else ("deploy", "target")
    if draft.get(start) != target and not (target == "local" and draft.get(start) is None):
        what = (f"the {target} launcher trains the job instead of the {draft.get(start)} "
                "launcher: the spec's hyper-parameters and data contract are the same; the "
                f"training loop and its numerics are {target}'s"
                if target in LAUNCHER_AIMS else
                f"`ftspec apply` sends the job to {target}; the training itself is the same")
        _apply(draft, target, Change(start, target, what))
    if target == "kubeflow":
        _shipped_runtime(draft)
    if target == "local":
        from ftspec.compiler.importers.aim_local import CPU_WHY, cpu_changes

        for path, value in cpu_changes(draft):
            _apply(draft, target, Change(path, DROP if value is None else value, CPU_WHY))
    for _ in range(ROUNDS):
        errors = _errors(draft, target)
        changes = [c for d in errors for c in _answer(draft, target, d)
                   if draft.get(c.path) != (None if c.value is DROP else c.value)]
        if not changes:  # nothing left to answer (or the answer is already there)
            break
        for change in changes:
            _apply(draft, target, change)
    left = _errors(draft, target)
    if left:
        draft.warnings.append(Diagnostic(
            Severity.WARNING, f"aimed at {target}, the spec still needs {len(left)} "
            f"addition{'s' if len(left) != 1 else ''} the source does not give",
            span=Span(draft.source.file, 1, 1), code=LEFT,
            hint=f"`ftspec compile SPEC --target {target}` lists each at its line with what "
            "to add"))


def _shipped_runtime(draft: SpecDraft) -> None:
    """torchtune on Kubeflow: the runtime Kubeflow Trainer ships for the model, named."""
    from ftspec.targets.kubeflow_torchtune import DEFAULT_RUNTIMES

    shipped = DEFAULT_RUNTIMES.get(str(draft.get(("model", "family"))))
    if draft.get(("launcher",)) != "torchtune" or shipped is None \
            or draft.get(("deploy", "kubeflow", "runtime")) is not None:
        return
    _apply(draft, "kubeflow", Change(
        ("deploy", "kubeflow", "runtime"), {"name": shipped, "kind": "ClusterTrainingRuntime"},
        f"runs on {shipped}, the ClusterTrainingRuntime Kubeflow Trainer ships for this model "
        "(its torchtune image, `tune run` and initializers); the training is the same"))


def _errors(draft: SpecDraft, target: str) -> list[Diagnostic]:
    """The located errors of the draft compiled for ``target``."""
    from ftspec.compiler.importers.render import rendered
    from ftspec.compiler.pipeline import CompileOptions, compile_spec

    platform = PLATFORMS.get(target)
    compile_as = target if platform is None else platform.compile_target
    result = compile_spec(rendered(draft), "artifacts", CompileOptions(target=compile_as))
    return [d for d in result.diagnostics if d.is_error]


def _answer(draft: SpecDraft, target: str, diag: Diagnostic) -> list[Change]:
    answer = FIXES.get((diag.code, diag.path))
    return answer(draft, diag) if answer is not None else []


def _apply(draft: SpecDraft, target: str, change: Change) -> None:
    old = draft.get(change.path)
    was = draft.origins.get(change.path) or ""
    span = draft.span_for_spec(change.path)
    if change.value is DROP:
        node = draft.get(change.path[:-1])
        if isinstance(node, dict):
            node.pop(change.path[-1], None)
        draft.origins.pop(change.path, None)
        action = f"{format_path(change.path)} {old!r} removed"
    else:
        draft.put(change.path, change.value,
                  f"--target {target}" + (f"; was {old!r}" if old is not None else "")
                  + (f" ({was})" if was else ""))
        action = f"{format_path(change.path)}: {change.value!r}" + (
            f" instead of {old!r}" if old is not None else "")
    draft.warnings.append(Diagnostic(
        Severity.WARNING, f"aimed at {target}: {action}: {change.why}",
        path=change.path, span=span, hint=change.hint, code=CODE))


def _epoch_checkpoints(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    every = draft.get(("training", "checkpointing", "steps"))
    changes = [Change(("training", "checkpointing", "strategy"), "epoch",
                      "a checkpoint is saved at the end of each epoch"
                      + (f" instead of every {every} steps" if every else "")
                      + " (torchtune saves then only); the training is the same")]
    if every is not None:
        changes.append(Change(("training", "checkpointing", "steps"), DROP,
                              "no step cadence with checkpoints by epoch; the training is "
                              "the same"))
    return changes


def _main_revision(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    if draft.get(("model", "revision")) != "main":
        return []  # another revision is other weights: the error stays
    return [Change(("model", "revision"), DROP, "torchtune reads the files the download "
                   "step fetched, the default branch: the revision main names, the same "
                   "weights")]


def _nf4_storage(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    return [Change(("method", "quantization", "storage_dtype"), DROP,
                   "torchtune keeps the 4-bit weights in its NF4 tensors' own storage; the "
                   "quantized values and the training are the same (storage is a layout)")]


def _fsdp2(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    return [Change(("distributed", "fsdp", "version"), 2,
                   "sharded by FSDP2 (per-parameter) instead of FSDP1 (flat parameters): "
                   "the same updates, a different sharding implementation")]


def _full_shard(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    was = draft.get(("distributed", "fsdp", "sharding"))
    if was != "hybrid_shard":
        return []  # no_shard replicates every state: full sharding is not the same memory plan
    return [Change(("distributed", "fsdp", "sharding"), "full_shard",
                   "parameters, gradients and optimizer state are sharded across every GPU "
                   "instead of within each node: the same updates, different communication")]


def _fsdp_for_ddp(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    if draft.get(("distributed", "strategy")) != "ddp":
        return []
    return [Change(("distributed", "strategy"), "fsdp",
                   "parameters, gradients and optimizer state are sharded (torchtune's FSDP2) "
                   "instead of replicated (DDP): the same updates, less memory per GPU")]


ZERO_AS_FSDP = {3: "full_shard", 2: "shard_grad_op"}
"""DeepSpeed ZeRO stage -> the FSDP sharding that splits the same states (3: parameters,
gradients and optimizer state; 2: gradients and optimizer state)."""


def _fsdp_for_zero(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    """ZeRO-2/3 without offload shard what FSDP's shard_grad_op / full_shard shard; an
    offload (optimizer only, or NVMe) has no FSDP2 counterpart in torchtune: the error
    stays."""
    zero = draft.get(("distributed", "deepspeed")) or {}
    stage = zero.get("stage", 2)
    offloads = {zero.get("offload_optimizer", "none"), zero.get("offload_params", "none")}
    if draft.get(("distributed", "strategy")) != "deepspeed" or stage not in ZERO_AS_FSDP \
            or offloads != {"none"} or draft.get(("distributed", "fsdp")) is not None:
        return []
    sharding = ZERO_AS_FSDP[stage]
    same = (f"ZeRO-{stage}'s sharding of the same states by FSDP2 ({sharding}): the same "
            "updates, torchtune's sharding implementation")
    return [Change(("distributed", "strategy"), "fsdp", same),
            Change(("distributed", "fsdp"), {"version": 2, "sharding": sharding}, same),
            Change(("distributed", "deepspeed"), DROP, same)]


def _one_sink(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    sinks = draft.get(("training", "logging", "report_to"))
    if not isinstance(sinks, list) or len(sinks) < 2:
        return []
    return [Change(("training", "logging", "report_to"), sinks[:1],
                   f"metrics go to {sinks[0]} only (torchtune's recipes take one logger), "
                   f"not to {', '.join(map(str, sinks[1:]))}; the training is the same")]


def _pure_for_autocast(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    dtype = draft.get(("model", "dtype")) or "bf16"
    return [Change(("model", "precision"), "pure",
                   f"the same {dtype} weights, gradients and optimizer state, but with no "
                   f"autocast every op computes in {dtype}: the ops autocast keeps in fp32 "
                   "(the loss, and softmax and norms on GPUs) round to "
                   f"{dtype}, so the losses differ in their last bits")]


def _generated_runtime(draft: SpecDraft, diag: Diagnostic) -> list[Change]:
    from ftspec.targets.kubeflow_torchtune import DEFAULT_RUNTIMES

    if draft.get(("launcher",)) != "accelerate":
        return []
    shipped = DEFAULT_RUNTIMES.get(str(draft.get(("model", "family"))))
    return [Change(("deploy", "kubeflow", "generate_runtime"), True,
                   "no runtime Kubeflow Trainer ships runs accelerate with TRL (they run "
                   "torchtune, torchrun on a PyTorch image, or DeepSpeed): ftspec writes a "
                   "TrainingRuntime that runs the same accelerate job; the training is the "
                   "same", hint=None if shipped is None else
                   f"Kubeflow Trainer ships {shipped} for this model: `ftspec import ... "
                   "--target torchtune --target kubeflow` runs torchtune's recipe on it, with "
                   "no image to build")]


FIXES: dict[tuple[str, KeyPath], Answer] = {
    ("contract.torchtune", ("training", "checkpointing", "strategy")): _epoch_checkpoints,
    ("contract.torchtune", ("model", "revision")): _main_revision,
    ("contract.torchtune", ("method", "quantization", "storage_dtype")): _nf4_storage,
    ("target.torchtune.fsdp-version", ("distributed", "fsdp", "version")): _fsdp2,
    ("target.torchtune.fsdp-sharding", ("distributed", "fsdp", "sharding")): _full_shard,
    ("target.torchtune.strategy", ("distributed", "strategy")): _fsdp_for_ddp,
    ("target.torchtune.deepspeed", ("distributed", "strategy")): _fsdp_for_zero,
    ("target.torchtune.report-to", ("training", "logging", "report_to")): _one_sink,
    ("target.torchtune.precision-autocast", ("model", "precision")): _pure_for_autocast,
    ("kubeflow.runtime-required", ("deploy", "kubeflow")): _generated_runtime,
}
"""(diagnostic code, key path) of a target's error -> the values that answer it, where the
source allows them. An answer returns no change where the value would train differently
than a warning can excuse (then the error stays)."""
