"""``ftspec import TOOL FILE --target T``: every corpus config (every file of every tool's
folder under ``tests/importers/corpus``, so configs added later are covered), aimed at kubeflow
and at torchtune, then compiled for that target. Either it compiles — the TrainJob (and the
runtime ftspec generates) validate against the upstream CRDs, torchtune's config loads with
torchtune's own loader — or every error is located in the aimed spec and its hint names what to
add. Each change the aim made is a warning at a line of the source config.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from ftspec.compiler.importers import IMPORTERS, ImportOptions
from ftspec.compiler.importers.aim import CODE, FIXES, LEFT, aim
from ftspec.compiler.pipeline import Compiled, CompileOptions, SpecInput, compile_spec
from ftspec.spec.diagnostics import Diagnostic

CORPUS = Path(__file__).parent / "corpus"
TOOL_OF = {"trl": "trl", "fms": "trl", "axolotl": "axolotl", "llamafactory": "llamafactory",
           "oumi": "oumi", "trainjob": "trainjob"}
"""Corpus folder -> the ``ftspec import`` tool that reads it."""
LAUNCHER_FILES = ("accelerate", "deepspeed", "jobs")
"""Corpus sub-folders of files a config names (accelerate and DeepSpeed configs, Oumi job
configs), not configs to import themselves; ``refused``: configs the import refuses at a
source line (each tool's import tests check where)."""
CONFIGS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml", ".json")
                 and p.parent.name not in LAUNCHER_FILES + ("refused",))


def _folder(config: Path) -> str:
    """The corpus folder a config belongs to (LLaMA-Factory's keep its examples/ layout)."""
    return config.relative_to(CORPUS).parts[0]
TARGETS = (("kubeflow",), ("torchtune",), ("torchtune", "kubeflow"))
"""``--target`` values of one import (compiled for the last): kubeflow alone, torchtune alone,
and torchtune's recipe on Kubeflow (the runtime Kubeflow Trainer ships for the model)."""
ADDITION = re.compile(r"\b(?:[a-z_]+\.)+[a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)*\b"
                      r"|\blauncher: [a-z]|\badd [a-z_]+: ")
"""A hint names what to add: a spec key path (``deploy.scheduling.image``) or a launcher."""
OPTIONAL = ("bitsandbytes",)
"""Packages of components torchtune's configs name (8-bit optimizers) that this machine may
not have; the component is then not imported."""


@dataclass(frozen=True)
class Outcome:
    config: Path
    target: str
    """The compile target: the last aim."""
    spec: Path
    aimed: tuple[Diagnostic, ...]
    origins: dict[tuple[object, ...], str]
    """The import's origin comments before the aim, by spec key path."""
    left: int
    """The count the import's last warning gives (0: none given)."""
    compiled: Compiled


@cache
def _outcome(config: Path, aims: tuple[str, ...], out: Path) -> Outcome:
    imported = IMPORTERS[TOOL_OF[_folder(config)]](config, (), ImportOptions())
    aimed = aim(imported, aims)
    target = aims[-1]
    spec = out / "-".join(aims) / _folder(config) / f"{config.stem}.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(aimed.text)
    compiled = compile_spec(SpecInput(spec), "artifacts", CompileOptions(target=target))
    left = [int(re.findall(r"needs (\d+)", w.summary)[0]) for w in aimed.warnings
            if w.code == LEFT]
    assert imported.draft is not None
    return Outcome(config, target, spec, tuple(w for w in aimed.warnings if w.code == CODE),
                   dict(imported.draft.origins), sum(left), compiled)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("aimed")


def test_every_corpus_folder_has_a_tool() -> None:
    assert {_folder(p) for p in CONFIGS} <= set(TOOL_OF), "map the new corpus folder"
    assert len(CONFIGS) >= 40


def _check_compiled(o: Outcome) -> None:
    files = {a.path: a.content for a in o.compiled.artifacts}
    if o.target == "kubeflow":
        from helpers.crd_schema import validation_errors
        from helpers.upstream import TRAININGRUNTIME_CRD, TRAINJOB_CRDS, crd

        docs = [d for text in files.values() if "kind:" in text
                for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        jobs = [d for d in docs if d.get("kind") == "TrainJob"]
        assert jobs, sorted(files)
        from ftspec.targets.kubeflow import resolve_version

        assert o.compiled.job is not None
        release = "v2.1.0" if resolve_version(o.compiled.job) == "v2.1" else "master"
        for doc in docs:
            path = {"TrainJob": TRAINJOB_CRDS[release],
                    "TrainingRuntime": TRAININGRUNTIME_CRD}.get(str(doc.get("kind")))
            if path is None:
                continue
            wrong = validation_errors(doc, crd(path), "v1alpha1")
            if wrong and doc["kind"] == "TrainJob" and _folder(o.config) == "trainjob":
                # the source TrainJob's own violations, carried by its overrides.trainjob
                sources = [d for d in yaml.safe_load_all(o.config.read_text())
                           if isinstance(d, dict) and d.get("kind") == "TrainJob"]
                assert set(wrong) <= {w for s in sources
                                      for w in validation_errors(s, crd(path), "v1alpha1")}
                continue
            assert wrong == [], o.spec
    else:
        from omegaconf import OmegaConf
        from torchtune.config._utils import _get_component_from_path

        conf = OmegaConf.to_container(OmegaConf.create(files["config.yaml"]), resolve=True)
        assert isinstance(conf, dict)
        for node in conf.values():
            if isinstance(node, dict) and "_component_" in node:
                top = str(node["_component_"]).split(".", 1)[0]
                if top in OPTIONAL and importlib.util.find_spec(top) is None:
                    continue  # not installed here: torchtune loads it where it is
                _get_component_from_path(node["_component_"])


@pytest.mark.slow
@pytest.mark.parametrize("aims", TARGETS, ids=["-".join(a) for a in TARGETS])
@pytest.mark.parametrize("config", CONFIGS, ids=[str(p.relative_to(CORPUS)) for p in CONFIGS])
def test_aimed_import_compiles_or_lists_each_addition(config: Path, aims: tuple[str, ...],
                                                      out: Path) -> None:
    o = _outcome(config, aims, out)
    for w in o.aimed:  # each change: a warning at a line of the source config
        assert w.span is not None and w.span.file == str(config) and w.span.line >= 1, w
        assert w.path and w.summary.startswith(tuple(f"aimed at {a}: " for a in aims)), w
        origin = o.origins.get(w.path, "")
        if f"from {config}:" in origin:  # the value it replaces came from this line
            assert re.search(rf"from {re.escape(str(config))}:{w.span.line}(?!\d)", origin), \
                (w, origin)
        assert "the training" in w.summary or "the same" in w.summary \
            or "trains" in w.summary, w.summary  # says what trains differently, or that nothing does
    changed = [(w.summary.split(":", 1)[0], w.path) for w in o.aimed]
    assert len(changed) == len(set(changed)), changed  # each change warned once
    errors = o.compiled.errors
    if len(aims) == 1:
        assert o.left == len(errors)  # the import counted what compile lists
    if not errors:
        _check_compiled(o)
        return
    for e in errors:
        assert e.span is not None and e.span.file == str(o.spec) and e.span.line >= 1, e
        assert e.hint and ADDITION.search(e.hint), f"{e.code}: {e.summary} (hint {e.hint!r})"
        answer = next((a for (code, path), a in FIXES.items()
                       if e.code == code and e.path == path), None)
        assert answer is None or e.code == "kubeflow.runtime-required" \
            or _unanswerable(o, e), f"the aim left {e.code} at {e.path} it can answer"


def _unanswerable(o: Outcome, e: Diagnostic) -> bool:
    """An error :data:`FIXES` knows is left only where the source value trains differently
    (a revision other than main, a sharding other than hybrid…)."""
    from ftspec.compiler.importers.aim import _answer
    from ftspec.compiler.importers.base import SpecDraft
    from ftspec.spec.loader import load_spec_file

    doc = load_spec_file(o.spec)
    return _answer(SpecDraft(doc, data=doc.data), o.target, e) == []


def test_kubeflow_additions_name_the_image_the_claim_and_the_key(out: Path) -> None:
    o = _outcome(CORPUS / "trl" / "handbook-2025-smollm2-sft.yaml", ("kubeflow",), out)
    hints = {(e.code, e.path): e.hint or "" for e in o.compiled.errors}
    assert "TRL" in hints[("kubeflow.image-required", ("deploy", "scheduling", "image"))]
    assert "add deploy.scheduling.image" in hints[("kubeflow.image-required",
                                                    ("deploy", "scheduling", "image"))]
    assert "output.uri: pvc://CLAIM/PATH" in hints[("kubeflow.uri-scheme", ("output", "uri"))]
    [wandb] = [h for (code, _), h in hints.items() if code == "kubeflow.wandb-key"]
    assert "secrets: {wandb_api_key: {secretRef:" in wandb
    data = yaml.safe_load(o.spec.read_text())
    assert data["deploy"]["target"] == "kubeflow"
    assert data["deploy"]["kubeflow"]["generate_runtime"] is True


def test_torchtune_aim_changes_are_warned_at_their_source_lines(out: Path) -> None:
    config = CORPUS / "trl" / "handbook-2025-smollm2-sft.yaml"
    o = _outcome(config, ("torchtune",), out)
    source = config.read_text().splitlines()
    at = {w.path: w for w in o.aimed}
    revision = at[("model", "revision")]
    assert revision.span is not None
    assert source[revision.span.line - 1].startswith("model_revision:")
    assert "same weights" in revision.summary
    assert ("training", "checkpointing", "strategy") in at
    assert ("launcher",) in at
    data = yaml.safe_load(o.spec.read_text())
    assert data["launcher"] == "torchtune" and "revision" not in data["model"]
    # left: SmolLM2 has no torchtune config and its Jinja template stays (never a "nearest")
    assert {e.path for e in o.compiled.errors} == {("model", "family"),
                                                  ("model", "chat_template")}


def test_shipped_runtime_is_named_when_torchtune_runs_on_kubeflow(tmp_path: Path) -> None:
    """torchtune then kubeflow: the model's runtime as Kubeflow Trainer ships it (the upstream
    manifest in the pinned Trainer release has that name and runs torchtune)."""
    from helpers.upstream import upstream_root

    config = CORPUS / "oumi" / "llama3_2-1b_full-train.yaml"
    imported = IMPORTERS["oumi"](config, (), ImportOptions())
    data = aim(imported, ("torchtune", "kubeflow")).data
    runtime = data["deploy"]["kubeflow"]["runtime"]
    assert runtime == {"name": "torchtune-llama3.2-1b", "kind": "ClusterTrainingRuntime"}
    shipped = upstream_root() / "kubeflow-trainer" / "runtimes"
    manifests = {d["metadata"]["name"]: d for f in shipped.glob("*.yaml")
                 for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)}
    assert manifests[runtime["name"]]["kind"] == runtime["kind"]
    assert manifests[runtime["name"]]["metadata"]["labels"][
        "trainer.kubeflow.org/framework"] == "torchtune"
    # and no shipped runtime runs accelerate: the accelerate launcher gets a generated one
    frameworks = {m["metadata"].get("labels", {}).get("trainer.kubeflow.org/framework")
                  for m in manifests.values()}
    assert "accelerate" not in frameworks and "trl" not in frameworks


@pytest.mark.slow
def test_figures(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compiled for the target / compiled once the listed additions are made, per tool and
    target, printed as docs/reference/import-and-models.md quotes them (``-k figures -s``)."""
    from ftspec.spec.rules import PREREQUISITES

    rows: Counter[tuple[str, str, str]] = Counter()
    left: Counter[tuple[str, str | None]] = Counter()
    together: Counter[str] = Counter()
    for aims in TARGETS:
        target = " --target ".join(aims)
        for config in CONFIGS:
            o = _outcome(config, aims, out)
            codes = {e.code or "" for e in o.compiled.errors}
            rules = {c for c in codes if c.startswith("rule.")}
            if rules and not rules & PREREQUISITES:  # the target's checks ran beside the rules
                assert o.compiled.job is not None and o.compiled.target == aims[-1], o.spec
                together[target] += bool(codes - rules)
            listed = all(e.span is not None and e.hint and ADDITION.search(e.hint)
                         for e in o.compiled.errors)
            kind = "compiled" if not o.compiled.errors else "listed" if listed else "unlisted"
            rows[(_folder(config), target, kind)] += 1
            left.update((target, e.code) for e in o.compiled.errors)
    with capsys.disabled():
        print()
        for target in (" --target ".join(a) for a in TARGETS):
            for tool in sorted({_folder(p) for p in CONFIGS}):
                n = sum(rows[(tool, target, k)] for k in ("compiled", "listed", "unlisted"))
                print(f"import {tool} --target {target}: {n} configs, "
                      f"{rows[(tool, target, 'compiled')]} compiled, "
                      f"{rows[(tool, target, 'listed')]} with the additions listed, "
                      f"{rows[(tool, target, 'unlisted')]} unlisted")
            print(f"  {target} additions left: " + ", ".join(
                f"{code} {n}" for (t, code), n in left.most_common() if t == target))
            print(f"  {target}: {together[target]} configs list rule and target errors "
                  "together")
    assert sum(n for (_, _, kind), n in rows.items() if kind == "unlisted") == 0
    # file:// locations on torchtune's runtime are a rule's errors; the target's are listed too
    assert together["torchtune --target kubeflow"] > 0


def test_zero3_becomes_fsdp_full_shard_at_the_deepspeed_line(out: Path) -> None:
    config = CORPUS / "llamafactory" / "llama3_lora_sft_ds3.yaml"
    o = _outcome(config, ("torchtune",), out)
    data = yaml.safe_load(o.spec.read_text())
    assert data["distributed"]["strategy"] == "fsdp" and "deepspeed" not in data["distributed"]
    assert data["distributed"]["fsdp"] == {"version": 2, "sharding": "full_shard"}
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1)
                if text.startswith("deepspeed:"))
    [warned] = [w for w in o.aimed if w.path == ("distributed", "strategy")]
    assert warned.span is not None and warned.span.line == line
    assert "ZeRO-3" in warned.summary and "the same updates" in warned.summary
    assert not [e for e in o.compiled.errors if e.path[:1] == ("distributed",)]


def test_kubeflow_alone_points_at_the_shipped_runtime(out: Path) -> None:
    """An accelerate job needs a generated runtime; where the model has a shipped torchtune
    runtime, the warning says how to use it instead."""
    o = _outcome(CORPUS / "oumi" / "llama3_2-1b_full-train.yaml", ("kubeflow",), out)
    [generated] = [w for w in o.aimed if w.path == ("deploy", "kubeflow", "generate_runtime")]
    assert generated.hint is not None and "torchtune-llama3.2-1b" in generated.hint
    assert "--target torchtune --target kubeflow" in generated.hint
