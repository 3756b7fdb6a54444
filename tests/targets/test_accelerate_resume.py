"""training.checkpointing.resume_from on the accelerate launcher, at compile time: each form
the field takes reaches sft.yaml as the folder TRL's ``SFTConfig`` reads (the run itself:
tests/e2e/test_resume_run.py), a pvc:// checkpoint's claim is mounted on Kubernetes, and a
checkpoint nothing would put where the Trainer looks is refused at its line in the spec."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.diagnostics import format_path
from ftspec.spec.loader import parse_yaml
from ftspec.targets.accelerate import sft_files
from ftspec.targets.kube import pvc_volumes
from helpers.jobs import make_job, spec_data
from helpers.trl_parse import trl_reads

LOCAL = {"launcher": "accelerate", "deploy": {"target": "local"},
         "data": {"train": {"uri": "file:///data/alpaca.jsonl"}},
         "output": {"uri": "file:///runs/b"}}
KUBEFLOW = {"launcher": "accelerate", "distributed": {"strategy": "fsdp"},
            "data": {"train": {"uri": "pvc://datasets/alpaca.jsonl"}},
            "output": {"uri": "pvc://outputs/run2"},
            "deploy": {"target": "kubeflow", "kubeflow": {"generate_runtime": True},
                       "scheduling": {"image": "ghcr.io/acme/ft:1"}}}


def _resume(base: dict[str, Any], resume_from: str) -> dict[str, Any]:
    return {**base, "training": {"checkpointing": {"strategy": "steps", "steps": 2,
                                                   "resume_from": resume_from}}}


@pytest.mark.parametrize(("resume_from", "folder"), [
    ("file:///runs/a/checkpoint-2", "/runs/a/checkpoint-2"),
    ("file://runs/a/checkpoint-2", "runs/a/checkpoint-2"),  # relative to the working dir
    ("/runs/a/checkpoint-2", "/runs/a/checkpoint-2"),
    ("runs/a/checkpoint-2", "runs/a/checkpoint-2"),
    ("pvc://ckpts/a/checkpoint-2", "/mnt/ckpts/a/checkpoint-2"),
])
def test_each_form_reaches_sft_yaml_as_the_folder_trl_reads(resume_from: str, folder: str
                                                           ) -> None:
    job = make_job(**_resume(LOCAL, resume_from))
    _, sft, _, raw = trl_reads(sft_files(job)["sft.yaml"])
    assert raw["resume_from_checkpoint"] == sft.resume_from_checkpoint == folder
    assert raw["save_strategy"] == "steps" and "save_only_model" not in raw  # full checkpoints


def test_no_resume_compiles_no_key() -> None:
    _, sft, _, raw = trl_reads(sft_files(make_job(**LOCAL))["sft.yaml"])
    assert "resume_from_checkpoint" not in raw and sft.resume_from_checkpoint is None


def test_a_pvc_checkpoint_on_its_own_claim_is_mounted_where_sft_yaml_looks() -> None:
    job = make_job(**_resume(KUBEFLOW, "pvc://ckpts/run1/checkpoint-2"))
    raw = yaml.safe_load(sft_files(job)["sft.yaml"])
    assert raw["resume_from_checkpoint"] == "/mnt/ckpts/run1/checkpoint-2"
    volumes, mounts = pvc_volumes(job)
    claims = {m["mountPath"]: v["persistentVolumeClaim"]["claimName"]
              for v, m in zip(volumes, mounts, strict=True)}
    assert claims["/mnt/ckpts"] == "ckpts"


def _errors(change: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    compiled = compile_spec(parse_yaml(yaml.safe_dump(spec_data(**change)), "spec.yaml"),
                            "checks")
    return [(d.code, format_path(d.path), d.format().split(": ", 1)[0])
            for d in compiled.errors]


def _line_of(change: dict[str, Any], key: str) -> str:
    text = yaml.safe_dump(spec_data(**change))
    [line] = [i for i, t in enumerate(text.splitlines(), 1) if t.lstrip().startswith(key)]
    return f"spec.yaml:{line}:"


@pytest.mark.parametrize(("base", "resume_from", "code"), [
    (LOCAL, "s3://bucket/run1/checkpoint-2", "target.accelerate.resume-scheme"),
    (LOCAL, "hf://acme/run1-checkpoint-2", "target.accelerate.resume-scheme"),
    (KUBEFLOW, "s3://bucket/run1/checkpoint-2", "target.accelerate.resume-scheme"),
    (KUBEFLOW, "file:///runs/a/checkpoint-2", "kubeflow.uri-scheme"),
], ids=["local-s3", "local-hf", "kubeflow-s3", "kubeflow-file"])
def test_a_checkpoint_nothing_fetches_is_refused_at_its_line(
        base: dict[str, Any], resume_from: str, code: str) -> None:
    change = _resume(base, resume_from)
    found = _errors(change)
    where = "training.checkpointing.resume_from"
    assert [f for f in found if f[:2] == (code, where)], found
    assert all(loc.startswith(_line_of(change, "resume_from:")) for c, p, loc in found
               if p == where), found
    assert not [f for f in _errors(_resume(base, "pvc://ckpts/run1/checkpoint-2"))
                if f[1] == where]
