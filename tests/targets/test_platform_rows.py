"""The platform rows (``spec/platforms.py`` ``PLATFORMS``) agree with every registry a
platform needs, so a fifth platform with a part left out fails here, never silently.

A platform is: a ``deploy.target`` value (``DeployTarget``) with a ``Platform`` row; the
row's backend registered in ``reconciler.backends.BACKENDS`` (a module with
``make_backend``), which saved plans accept; its compile target registered with the targets
(``targets.TARGET_NAMES``, a module with ``TARGET``) and what the compiler's dispatch picks
for the target; its ``deploy.<target>`` section (when the spec has one) owned in the field
contract; a Kubernetes row's kinds (the job's first) known to the Kubernetes backend, its
name rule, and the objects its compile target emits among its kinds; what it says it can
preflight made by its backend.

``platform_problems`` checks all of that for a set of rows; the tests run it on the real
rows (no problem) and on rows with one part missing each (that problem named).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

import pytest
from ftspec.compiler.dispatch import compile_job, default_target
from ftspec.reconciler.backends import BACKENDS
from ftspec.reconciler.kubernetes.resources import JOB_KIND, KINDS, MANAGED_KINDS
from ftspec.reconciler.saved import BACKENDS as SAVED_BACKENDS
from ftspec.spec.model.deploy import Deploy
from ftspec.spec.platforms import DEPLOY_TARGETS, PLATFORMS, Platform
from ftspec.targets import TARGET_NAMES, get_target
from ftspec.targets.contract import SECTIONS
from ftspec.targets.kube_names import name_limit

from tests.helpers.jobs import make_job


def _backend_class(name: str) -> Any:
    module = importlib.import_module(BACKENDS[name])
    return next(v for v in vars(module).values()
                if isinstance(v, type) and getattr(v, "name", None) == name
                and v.__module__ == module.__name__)


def _has_target(name: str) -> bool:
    """What the compiler's dispatch reaches: the name is a compile target and its module
    defines ``TARGET`` of that name."""
    if name not in TARGET_NAMES:  # TARGET_NAMES is read from the rows: a row outside
        return False              # PLATFORMS (the tests below) can name anything
    try:
        return get_target(name).name == name
    except ImportError:
        return False


def _row_problems(row: Platform) -> list[str]:
    t = row.target
    found = []
    if row.backend not in BACKENDS:
        found.append(f"{t}: backend {row.backend!r} is not in reconciler.backends.BACKENDS")
    elif not hasattr(importlib.import_module(BACKENDS[row.backend]), "make_backend"):
        found.append(f"{t}: backend module {BACKENDS[row.backend]} has no make_backend")
    if row.backend not in SAVED_BACKENDS:
        found.append(f"{t}: saved plans refuse backend {row.backend!r}")
    if row.compile_target is not None and not _has_target(row.compile_target):
        found.append(f"{t}: compile target {row.compile_target!r} is not registered (a "
                     f"module ftspec.targets.{row.compile_target} whose TARGET has that name)")
    if row.kubernetes != (row.backend == "kubernetes"):
        found.append(f"{t}: kubernetes={row.kubernetes} but backend {row.backend!r}")
    if row.kubernetes:
        if not row.kinds:
            found.append(f"{t}: a Kubernetes platform without kinds")
        found += [f"{t}: kind {k} unknown to the Kubernetes backend (resources.KINDS)"
                  for k in row.kinds if k not in KINDS]
        if row.name_rule is None:
            found.append(f"{t}: a Kubernetes platform without a name rule")
    elif row.kinds or row.name_rule is not None or "crd-rules" in row.preflight:
        found.append(f"{t}: kinds, a name rule or CRD rules off Kubernetes")
    if ("name-length" in row.preflight) != (row.name_rule == "jobset"):
        found.append(f"{t}: plan checks the name on a runtime read from the cluster "
                     "exactly where the JobSet rule applies")
    if not row.preflight:
        found.append(f"{t}: says nothing it checks before apply")
    elif not row.kubernetes and row.backend in BACKENDS \
            and not callable(getattr(_backend_class(row.backend), "preflight", None)):
        found.append(f"{t}: its backend {row.backend!r} makes no preflight")
    if t in Deploy.model_fields and t not in SECTIONS.get(("deploy", t), ()):
        found.append(f"{t}: the field contract does not give it deploy.{t}")
    return found


def platform_problems(rows: dict[str, Platform]) -> list[str]:
    """Every part a platform needs that a row, or a registry, leaves out."""
    found = [f"deploy.target {t} has no platform row"
             for t in DEPLOY_TARGETS if t not in rows]
    found += [f"row {t} is not a deploy.target value" for t in rows if t not in DEPLOY_TARGETS]
    found += [f"row keyed {t} is the row of {row.target}"
              for t, row in rows.items() if row.target != t]
    for row in rows.values():
        found += _row_problems(row)
    used = {row.backend for row in rows.values()}
    found += [f"backend {b} serves no platform" for b in BACKENDS if b not in used]
    return found


def test_the_rows_agree_with_every_registry() -> None:
    assert platform_problems(PLATFORMS) == []


@pytest.mark.parametrize(("change", "said"), [
    ({"backend": "slurm"}, "backend 'slurm' is not in reconciler.backends.BACKENDS"),
    ({"compile_target": "volcano"}, "compile target 'volcano' is not registered"),
    ({"kinds": ()}, "a Kubernetes platform without kinds"),
    ({"kinds": ("VolcanoJob",)}, "kind VolcanoJob unknown to the Kubernetes backend"),
    ({"name_rule": None}, "a Kubernetes platform without a name rule"),
    ({"kubernetes": False}, "kubernetes=False but backend 'kubernetes'"),
    ({"preflight": ()}, "says nothing it checks before apply"),
    ({"preflight": ("objects",)}, "exactly where the JobSet rule applies"),
])
def test_a_row_with_a_part_missing_is_named(change: dict[str, Any], said: str) -> None:
    rows = {**PLATFORMS, "kubeflow": replace(PLATFORMS["kubeflow"], **change)}
    assert any(said in p for p in platform_problems(rows)), platform_problems(rows)


def test_a_fifth_target_without_a_row_or_with_a_row_alone_is_named() -> None:
    without = {t: p for t, p in PLATFORMS.items() if t != "ray"}
    assert "deploy.target ray has no platform row" in platform_problems(without)
    assert "backend ray serves no platform" in platform_problems(without)
    fifth = Platform("volcano", "volcano", "kubernetes", kubernetes=True,
                     kinds=("TrainJob",), name_rule="jobset",
                     preflight=("objects", "name-length"))
    assert platform_problems({**PLATFORMS, "volcano": fifth}) == [
        "row volcano is not a deploy.target value",
        ("volcano: compile target 'volcano' is not registered (a module "
         "ftspec.targets.volcano whose TARGET has that name)")]


def test_a_row_off_kubernetes_whose_backend_makes_no_preflight_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cls = _backend_class("ray")
    monkeypatch.delattr(cls, "preflight")
    assert "ray: its backend 'ray' makes no preflight" in platform_problems(PLATFORMS)


def test_the_kubernetes_backend_reads_its_kinds_from_the_rows() -> None:
    kube = {t: p for t, p in PLATFORMS.items() if p.kubernetes}
    assert MANAGED_KINDS == {t: p.kinds for t, p in kube.items()}
    assert JOB_KIND == {t: p.kinds[0] for t, p in kube.items()}


@pytest.mark.parametrize("target", [t for t, p in PLATFORMS.items() if p.kubernetes])
def test_a_kubernetes_platform_emits_its_job_kind_and_only_its_kinds(target: str) -> None:
    """What its compile target emits is what the backend lists to find orphans; its name
    rule gives the name limit of a spec on a runtime known without a cluster."""
    job = make_job(deploy={"target": target})
    row = PLATFORMS[target]
    assert name_limit(job.spec, target) is not None
    assert default_target(job) == row.compile_target
    assert get_target(default_target(job)).name == row.compile_target
    kinds = [a.obj["kind"] for a in compile_job(job, default_target(job))
             if a.kind == "manifest" and a.obj is not None]
    assert row.job_kind in kinds
    assert set(kinds) <= set(row.kinds), kinds
