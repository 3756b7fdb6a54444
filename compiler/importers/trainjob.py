"""``ftspec import trainjob FILE``: a Kubeflow Trainer TrainJob as a spec (deploy.target kubeflow).

The object's own fields map to the spec: metadata (labels, annotations, Kueue's queue and
priority labels), ``runtimeRef``, ``suspend``, ``activeDeadlineSeconds``, the trainer's
image, ``numNodes``, ``numProcPerNode`` and ``resourcesPerNode`` (GPUs, CPU, memory), the
initializers' ``storageUri`` (model.uri, data.train.uri). What trains depends on the runtime:

- a torchtune runtime (``torchtune-<model>``, command ``tune run`` or none): the config the
  Trainer's torchtune plugin picks, with the TrainJob's args, read through ``import
  torchtune`` (``trainjob_torchtune``): the spec's model, data, method and training are the
  values that run.
- any other runtime: a custom trainer. Its command (or ``null``: the runtime's) is kept in
  ``overrides.trainjob``, so the TrainJob runs its own program; the spec's model, data and
  training are then placeholders, and ``validate`` says they do not reach the TrainJob.

``trainjob_residue`` compiles the draft and keeps what still differs in
``overrides.trainjob`` (a merge patch applied last), each key with a warning at its line.
"""

from __future__ import annotations

import re
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft, family_for_hub_id, unsupported
from ftspec.compiler.importers.trainjob_defaults import (
    CRD_DEFAULTS,
    MUST_DIFFER,
    SERVER_WRITTEN,
    TOOL,
)
from ftspec.compiler.importers.trainjob_patch import ftspec_patch
from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.loader import SourceDoc
from ftspec.spec.ownership import SPEC_ID_LABEL, owned_spec_id
from ftspec.targets.kube import GPU_RESOURCE, KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL

PLACEHOLDER_FAMILY = "smollm2-135m"
OWN = ("overrides", "trainjob", "spec", "trainer")
_TORCHTUNE_COMMAND = ["tune", "run"]


def import_trainjob_doc(doc: SourceDoc, *, accelerator: str, version: str | None = None,
                        live: bool = False, what: str | None = None) -> Imported:
    """``doc`` holds one TrainJob; ``version``: the Trainer API the cluster serves (live),
    ``live``: keep the trainer's args as they are (adoption must not replace the object)."""
    from ftspec.compiler.importers.render import render
    from ftspec.compiler.importers.trainjob_residue import settle

    draft = SpecDraft(doc)
    _literal_secrets(draft)
    _metadata(draft)
    _deploy(draft)
    world = _resources(draft, accelerator)
    done, same_args = False, None
    if is_torchtune(doc.data["spec"]):
        from ftspec.compiler.importers.trainjob_torchtune import torchtune_sections

        done, same_args = torchtune_sections(draft, live=live)
    if not done:
        _custom(draft, world)
    ftspec_patch(draft)
    _token(draft)
    settle(draft, version, same_args)
    head = (f"Imported by `ftspec import trainjob` from {what or doc.file} ({TOOL}).",
            "Comments say where each value came from; the CRD's defaults are written out.")
    return Imported("trainjob", render(draft, head), draft.data, draft.diagnostics(),
                    draft, head)


def _literal_secrets(d: SpecDraft) -> None:
    """A credential written as a plain env value (the Kubeflow SDK puts ``access_token``
    there) would be copied into the spec and printed: refused, and the copy redacted."""
    from ftspec.spec.diagnostics import Diagnostic, Severity
    from ftspec.spec.secrets import REDACTED, secret_named

    spec = d.source.data["spec"]
    init = spec.get("initializer") or {}
    places: list[tuple[tuple[str, ...], Any]] = [
        (("spec", "initializer", part, "env"), (init.get(part) or {}).get("env"))
        for part in ("model", "dataset")]
    places.append((("spec", "trainer", "env"), (spec.get("trainer") or {}).get("env")))
    for path, env in places:
        for i, entry in enumerate(env if isinstance(env, list) else []):
            if isinstance(entry, dict) and "value" in entry and \
                    secret_named(str(entry.get("name", ""))):
                d.warnings.append(Diagnostic(
                    Severity.ERROR, f"{entry['name']} holds a literal credential; ftspec keeps "
                    "secrets as references and never copies or prints one",
                    path=path + (i, "value"), span=d.source.span_of(path + (i, "value")),
                    hint="put it in a Secret and reference it (valueFrom.secretKeyRef, or "
                    "the spec's secrets.hf_token: {secretRef: {name, key}})",
                    code="import.literal-secret"))
                entry["value"] = REDACTED


def _token(d: SpecDraft) -> None:
    """The initializers' HF token as the kubeflow target writes it from ``secrets.hf_token``:
    ``ACCESS_TOKEN`` read from a Secret key (or the whole Secret through ``secretRef``)."""
    init = d.source.data["spec"].get("initializer") or {}
    for part in ("model", "dataset"):
        got = init.get(part) or {}
        env = got.get("env") or []
        at: tuple[Any, ...] = ("spec", "initializer", part)
        ref = (env[0].get("valueFrom") or {}).get("secretKeyRef") if len(env) == 1 and \
            isinstance(env[0], dict) and env[0].get("name") == "ACCESS_TOKEN" else None
        if isinstance(ref, dict) and ref.get("name"):
            d.put(("secrets", "hf_token", "secretRef"), {"name": ref["name"],
                  "key": ref.get("key", "token")}, d.origin_of(at + ("env",)))
            return
        if not env and isinstance(got.get("secretRef"), dict) and got["secretRef"].get("name"):
            d.put(("secrets", "hf_token", "secretRef"), {"name": got["secretRef"]["name"],
                  "key": "ACCESS_TOKEN"}, d.origin_of(at + ("secretRef",)))
            return


def is_torchtune(spec: dict[str, Any]) -> bool:
    trainer = spec.get("trainer") or {}
    command = trainer.get("command") if isinstance(trainer, dict) else None
    return (str(spec["runtimeRef"]["name"]).startswith("torchtune-")
            and command in (None, _TORCHTUNE_COMMAND))


def _metadata(d: SpecDraft) -> None:
    obj = d.source.data
    meta = obj.get("metadata") or {}
    d.put(("apiVersion",), "ftspec.dev/v1alpha1", "")
    d.put(("kind",), "FineTune", "")
    d.take(("metadata", "name"), ("metadata", "name"))
    d.take(("metadata", "namespace"), ("metadata", "namespace"))
    _generate_name(d, meta)
    labels = meta.get("labels") or {}
    owned = owned_spec_id(labels)
    if owned:
        d.put(("metadata", "id"), owned, d.origin_of(("metadata", "labels",
                                                                       SPEC_ID_LABEL)))
    elif re.fullmatch(r"[a-z0-9]([-a-z0-9_.]*[a-z0-9])?", str(meta.get("name", ""))):
        d.put(("metadata", "id"), meta["name"], "the TrainJob's name: the spec's identity "
              "(ownership label ftspec.dev/spec-id), whatever the spec file is called")
    for key, value in labels.items():
        src = ("metadata", "labels", key)
        if ("metadata", "labels", key) in MUST_DIFFER:
            continue
        if key == KUEUE_QUEUE_LABEL:
            d.put(("deploy", "scheduling", "queue"), value, d.origin_of(src))
        elif key == KUEUE_PRIORITY_LABEL:
            d.put(("deploy", "scheduling", "priority_class"), value, d.origin_of(src))
        else:
            d.put(("metadata", "labels", key), value, d.origin_of(src))
    for key, value in (meta.get("annotations") or {}).items():
        if ("metadata", "annotations", key) not in MUST_DIFFER:
            d.put(("metadata", "annotations", key), value,
                  d.origin_of(("metadata", "annotations", key)))
    for key in meta:
        if key in SERVER_WRITTEN:
            continue
        if key not in ("name", "namespace", "labels", "annotations", "generateName"):
            d.warn(("metadata", key), f"metadata.{key} has no spec field: not imported")


def _generate_name(d: SpecDraft, meta: dict[str, Any]) -> None:
    """``generateName`` without ``name``: the API server names each TrainJob it creates
    with a random suffix, so a later plan could not find the one ftspec applied; the spec
    names it by the prefix instead (said in a warning), or refuses a prefix that is no name."""
    prefix = meta.get("generateName")
    if prefix is None or "name" in meta:
        return
    at: KeyPath = ("metadata", "generateName")
    name = str(prefix).rstrip("-.")
    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name):
        raise unsupported(d.source, at, f"generateName {prefix!r}: ftspec names the TrainJob "
                          "it applies (metadata.name), and this prefix is no name for it",
                          "set metadata.name to the name the TrainJob should have")
    d.put(("metadata", "name"), name, f"{d.origin_of(at)} (generateName without its suffix)")
    d.warn(at, f"generateName {prefix!r}: the API server would give each created TrainJob "
           f"a random suffix, so no later plan could find it; imported as metadata.name "
           f"{name} (ftspec creates the TrainJob by that name and finds it again)")


def _deploy(d: SpecDraft) -> None:
    spec = d.source.data["spec"]
    d.put(("deploy", "target"), "kubeflow", "a TrainJob runs on Kubeflow Trainer")
    kf = ("deploy", "kubeflow")
    d.take(("spec", "runtimeRef", "name"), kf + ("runtime", "name"))
    if not d.take(("spec", "runtimeRef", "kind"), kf + ("runtime", "kind")):
        d.put(kf + ("runtime", "kind"), CRD_DEFAULTS[("spec", "runtimeRef", "kind")],
              f"{TOOL} default (runtimeRef.kind)")
    if any(k in spec for k in ("podTemplateOverrides", "labels", "annotations")):
        key = next(k for k in ("podTemplateOverrides", "labels", "annotations") if k in spec)
        d.put(kf + ("trainer_version",), "v2.1",
              f"{d.origin_of(('spec', key))} (spec.{key}: the v2.1 API)")
    d.take(("spec", "suspend"), kf + ("suspend",))
    d.take(("spec", "activeDeadlineSeconds"), kf + ("active_deadline_seconds",))
    d.take(("spec", "trainer", "image"), ("deploy", "scheduling", "image"))


def _resources(d: SpecDraft, accelerator: str) -> int:
    trainer = d.source.data["spec"].get("trainer") or {}
    r = ("resources",)
    if not d.take(("spec", "trainer", "numNodes"), r + ("nodes",)):
        d.put(r + ("nodes",), 1, "not in the TrainJob: the runtime's mlPolicy decides; 1 "
              "assumed")
    res = trainer.get("resourcesPerNode") or {}
    amounts = {**(res.get("requests") or {}), **(res.get("limits") or {})}
    where = "limits" if "limits" in res else "requests"
    src = ("spec", "trainer", "resourcesPerNode", where)
    gpus = amounts.get(GPU_RESOURCE)
    if gpus is not None:
        d.put(r + ("gpus_per_node",), int(gpus), d.origin_of(src + (GPU_RESOURCE,)))
        d.put(r + ("accelerator",), accelerator, "not in the TrainJob: the nodes decide "
              "(--accelerator)")
    else:
        d.put(r + ("gpus_per_node",), 0, "no nvidia.com/gpu in resourcesPerNode")
    for key in ("cpu", "memory"):
        if key in amounts:
            d.put(r + (key,), str(amounts[key]), d.origin_of(src + (key,)))
    procs = trainer.get("numProcPerNode")
    if isinstance(procs, int):
        d.take(("spec", "trainer", "numProcPerNode"), r + ("processes_per_node",))
    nodes = d.get(r + ("nodes",))
    per = procs if isinstance(procs, int) else (int(gpus) if gpus else 1)
    return int(nodes or 1) * max(per, 1)


def _custom(d: SpecDraft, world: int) -> None:
    """A custom trainer: its program decides; the ML sections are placeholders."""
    spec = d.source.data["spec"]
    trainer = spec.get("trainer") or {}
    d.put(("launcher",), "accelerate", "a custom trainer: the TrainJob runs its own command")
    if "command" in trainer:
        d.put(OWN + ("command",), trainer["command"], d.origin_of(("spec", "trainer",
                                                                   "command")))
    else:
        d.put(OWN + ("command",), None, "not in the TrainJob: the runtime's command runs")
    init = spec.get("initializer") or {}
    model_uri = (init.get("model") or {}).get("storageUri")
    placeholder = "placeholder: the TrainJob's own program decides"
    if isinstance(model_uri, str):
        d.put(("model", "uri"), model_uri, d.origin_of(("spec", "initializer", "model",
                                                       "storageUri")))
    else:
        d.put(("model", "uri"), "hf://unknown/model", f"{placeholder} (no model initializer)")
    family = family_for_hub_id(model_uri) if isinstance(model_uri, str) else None
    d.put(("model", "family"), family or PLACEHOLDER_FAMILY,
          "the model's hub id (catalog)" if family else f"{placeholder} (no catalog model)")
    data_uri = (init.get("dataset") or {}).get("storageUri")
    if isinstance(data_uri, str):
        d.put(("data", "train", "uri"), data_uri,
              d.origin_of(("spec", "initializer", "dataset", "storageUri")))
    else:
        d.put(("data", "train", "uri"), "hf://unknown/dataset",
              f"{placeholder} (no dataset initializer)")
    d.put(("data", "train", "format"), "text", placeholder)
    d.put(("training", "global_batch_size"), world, f"{placeholder} (1 per process)")
    d.put(("training", "micro_batch_size"), 1, placeholder)
    d.put(("training", "learning_rate"), 1.0e-5, placeholder)
    d.warn(("spec", "trainer", "command") if "command" in trainer else ("spec", "runtimeRef"),
           "a custom trainer: its program decides the model, data and hyper-parameters; "
           "the spec's model, data and training sections are placeholders that do not "
           "reach the TrainJob (validate says so too)")
