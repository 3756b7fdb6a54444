"""The field contract: which spec fields each target honours, and a located diagnostic for
every other field set away from its default.

Three tables, read by ``contract_findings`` (called for every target by the compiler's
dispatch, so `validate`, `compile`, `plan` and `apply` all see the same findings):

- ``SECTIONS``: parts of the spec that belong to one deploy target or launcher. They are in
  scope when the compile target, the spec's launcher or its ``deploy.target`` is an owner;
  otherwise a non-default value is a warning (nothing runs differently: the section is for
  another platform).
- ``GAPS``: per launcher, fields it cannot express (each launcher's ``gaps()``, filled
  on first use): an error where the run
  would differ from the spec, a warning where ignoring the field is harmless.
- ``NOT_IN_ARTIFACTS``: fields honoured without changing the compiled files (they feed the
  estimate in `explain` or are read by a backend at run time), with where they are used.

``tests/contract`` proves the tables complete: for every schema leaf x target, moving the
field off its default changes the artifacts or yields one of these diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job
from ftspec.spec.platforms import KUBERNETES_PLATFORMS, LAUNCHERS
from ftspec.targets.gap import Gap
from pydantic import BaseModel

SECTIONS: dict[KeyPath, tuple[str, ...]] = {
    ("deploy", "kubeflow"): ("kubeflow",),
    ("deploy", "kuberay"): ("kuberay",),
    ("deploy", "ray"): ("ray",),
    ("deploy", "local"): ("local",),
    ("deploy", "ray_nodes"): ("ray", "kuberay"),
    ("deploy", "scheduling"): KUBERNETES_PLATFORMS,
    ("overrides", "trainjob"): ("kubeflow",),
    ("overrides", "rayjob"): ("kuberay",),
    ("overrides", "torchtune"): ("torchtune",),
    ("overrides", "accelerate"): ("accelerate",),
    ("overrides", "training_args"): ("accelerate",),
    ("entrypoint",): ("accelerate",),
    ("metadata", "labels"): ("kubeflow", "kuberay", "ray"),
    ("metadata", "annotations"): ("kubeflow", "kuberay", "ray"),
    ("metadata", "namespace"): KUBERNETES_PLATFORMS,
    ("resources", "cpu"): ("kubeflow", "kuberay", "ray"),
    ("resources", "memory"): KUBERNETES_PLATFORMS,
}
"""Section -> the deploy targets / launchers that read it."""

_E, _W = Severity.ERROR, Severity.WARNING


GAPS: dict[str, tuple[Gap, ...]] = {}
"""Launcher -> fields it does not honour (its ``gaps()``), filled on first use by
``launcher_gaps`` so a compile imports only its own launcher."""


def launcher_gaps(name: str) -> tuple[Gap, ...]:
    if name not in GAPS:
        from ftspec.targets import get_launcher

        GAPS[name] = get_launcher(name).gaps()
    return GAPS[name]


NOT_IN_ARTIFACTS: dict[KeyPath, str] = {
    ("metadata", "description"): "documentation only",
    ("metadata", "id"): "the job's identity: the address plan and apply use, the ownership "
                        "label of platform objects, the local run folder",
    ("data", "train", "num_examples"): "steps per epoch and warm-up in the Job (explain)",
    ("data", "validation", "num_examples"): "documentation only (evaluation size)",
    ("data", "mixture", "datasets", "*", "num_examples"): "steps per epoch in the Job",
    ("model", "params_b"): "the memory estimate",
    **{(*at, "identity"): "read by plan: whether the input's content is compared with the "
       "applied run's (reconciler.inputs)"
       for at in (("model",), ("model", "tokenizer"), ("data", "train"), ("data", "validation"),
                  ("data", "mixture", "datasets", "*"))},
    **{(*at, "as_chat"): "torchtune's instruct_dataset always renders rows as messages "
       "through the tokenizer's prompt template (accelerate: prepare.json)"
       for at in (("data", "train"), ("data", "validation"), ("data", "mixture", "datasets",
                                                                "*"))},
    ("resources", "accelerator"): "the memory estimate and the precision checks "
                                  "(and node selection on Kubernetes)",
    ("secrets",): "read by the backend at apply time (environment / Secret references)",
    ("deploy", "local", "env"): "read by the local backend at apply time",
    ("deploy", "ray", "address"): "read by the ray backend: the Jobs API it submits to",
    ("sweep",): "expanded before compiling: one job per grid point, each compiled with the "
                "point's values (compiler/sweep.py)",
    ("deploy", "target"): "picks the compile target (and backend) when --target is not given",
    ("model", "family"): "accelerate: the memory estimate and the FSDP layer class "
                         "(torchtune: its recipe config)",
}
"""Fields honoured without changing the compiled files, and where they are used."""


ABOUT: dict[str, tuple[KeyPath, ...]] = {}
"""Diagnostic code -> the fields it is about besides the key it is located at (a check that
points at the field to change, while the field that moved is another). The field-contract
test counts such a diagnostic as the answer for these fields too."""



def off_default(spec: BaseModel, path: KeyPath) -> bool:
    """Whether the field at ``path`` differs from its default (an absent optional section
    is at its default)."""
    obj: Any = spec
    for i, key in enumerate(path):
        if not isinstance(obj, BaseModel):
            return False
        info = type(obj).model_fields[str(key)]
        value = getattr(obj, str(key))
        if i == len(path) - 1:
            return bool(value != info.get_default(call_default_factory=True))
        obj = value
    return False


def _scope(job: Job, target: str) -> set[str]:
    return {target, job.launcher, job.target}


def contract_findings(job: Job, target: str) -> list[Diagnostic]:
    """Diagnostics for fields ``target`` does not honour (paths only; placed later)."""
    return list(_findings(job, target))


def _findings(job: Job, target: str) -> Iterator[Diagnostic]:
    spec = job.spec
    scope = _scope(job, target)
    for path, owners in SECTIONS.items():
        if not scope & set(owners) and off_default(spec, path):
            yield Diagnostic(
                _W, f"{'.'.join(map(str, path))} is for {' / '.join(owners)}; the {target} "
                f"target ignores it", path=path, code="contract.other-target",
                hint=f"remove it, or compile for {owners[0]}")
    if target in LAUNCHERS and target != job.launcher:
        yield Diagnostic(
            _E, f"the spec's launcher is {job.launcher}; the {target} target would run "
            f"{target} instead", path=("launcher",), code="contract.launcher",
            hint=f"compile for {job.launcher}, or set launcher: {target}")
    launcher = target if target in LAUNCHERS else job.launcher
    for gap in launcher_gaps(launcher):
        if not off_default(spec, gap.path) or (gap.when is not None and not gap.when(job)):
            continue
        yield Diagnostic(gap.severity, gap.reason, path=gap.path,
                         hint=gap.hint or _default_hint(gap, launcher),
                         code=f"contract.{launcher}")


def _default_hint(gap: Gap, launcher: str) -> str | None:
    """An error gap with no hint of its own: the value the launcher runs (the field's
    default) is what to write."""
    import typing

    from ftspec.spec.model import FineTuneSpec

    if gap.severity != Severity.ERROR:
        return None
    owner: Any = FineTuneSpec
    default: Any = None
    for key in gap.path:
        fields = getattr(owner, "model_fields", None)
        info = fields.get(str(key)) if isinstance(fields, dict) else None
        if info is None:
            return None
        default = info.get_default(call_default_factory=True)
        kinds = (info.annotation, *typing.get_args(info.annotation))
        owner = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)),
                     None)
    shown = str(default).lower() if isinstance(default, bool) else default
    return (f"remove {'.'.join(map(str, gap.path))} (the default, {shown}, is what "
            f"{launcher} runs), or use another launcher")
