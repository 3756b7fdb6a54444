"""An object's essence as what it runs, for the planner's comparison.

Most objects are compared as they are (their essence). A RayJob names its Ray job by a
digest of the run (``spec.jobId``), repeats it inside the entrypoint (the run folder) and
carries the launcher's files inside ``runtimeEnvYAML`` (base64 JSON, with ftspec's header
comments): compared as is, a new ftspec that submits the same run would replace every
live RayJob. So those three fields are compared as the Ray backend compares jobs
(``reconciler.ray.compare.run_view``): the id put aside, files unpacked, headers dropped;
the Ray job's ``spec.metadata`` without the spec hash an older ftspec put there and
without its copy of the spec-id label.
A spec-id label inside the object (pod template labels) is not compared: the object's own
label says who owns it. A TrainJob's ``spec.runtimePatches[].time`` is not compared either:
the Trainer's mutating webhook stamps it at every admission, dry runs included, so the live
object and the dry run always differ there (found by the real Trainer v2.3.0: every plan of
an unchanged TrainJob planned a replace). The live object is untrusted: YAML that does not load (or is too large) compares as text.
"""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.kubernetes.essence import IGNORED_ANNOTATIONS
from ftspec.spec.ownership import SPEC_ID_LABEL

RUN_FIELDS = ("jobId", "entrypoint", "runtimeEnvYAML")
MAX_YAML_CHARS = 4 << 20


def _runtime_env(text: Any) -> Any:
    if not isinstance(text, str) or len(text) > MAX_YAML_CHARS:
        return text
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _without_nested_ids(value: Any) -> Any:
    """``value`` without the spec-id label in the label maps inside it (pod templates):
    they copy the object's own label, which alone tells the owner and is compared; a job
    moved to its new identity (``reconciler.identity``) keeps the old copies, immutable in
    a TrainJob's runtime patches."""
    if isinstance(value, list):
        return [_without_nested_ids(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, sub in value.items():
        if key == "labels" and isinstance(sub, dict) and SPEC_ID_LABEL in sub:
            sub = {k: v for k, v in sub.items() if k != SPEC_ID_LABEL}
            if not sub:
                continue
        out[key] = _without_nested_ids(sub)
    return out


def _without_patch_times(spec: dict[str, Any]) -> dict[str, Any]:
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list):
        return spec
    kept = [{k: v for k, v in p.items() if k != "time"} if isinstance(p, dict) else p for p in patches]
    return {**spec, "runtimePatches": kept}


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (an essence) with a RayJob's run fields replaced by ``spec.run`` and the
    spec-id label compared on the object only (``_without_nested_ids``)."""
    obj = {k: v if k == "metadata" else _without_nested_ids(v) for k, v in obj.items()}
    spec = obj.get("spec")
    if obj.get("kind") == "TrainJob" and isinstance(spec, dict):
        return {**obj, "spec": _without_patch_times(spec)}
    if obj.get("kind") != "RayJob" or not isinstance(spec, dict):
        return obj
    from ftspec.reconciler.ray.compare import run_view  # only a RayJob plan needs Ray's modules

    runtime = _runtime_env(spec.get("runtimeEnvYAML"))
    view = run_view({"submission_id": spec.get("jobId"), "entrypoint": spec.get("entrypoint"),
                     "runtime_env": runtime if isinstance(runtime, dict) else {}})
    if runtime is not None and not isinstance(runtime, dict):
        view["runtimeEnvYAML"] = runtime
    rest = {key: value for key, value in spec.items() if key not in RUN_FIELDS}
    if isinstance(rest.get("metadata"), dict):  # the Ray job's metadata: ftspec's marks
        rest["metadata"] = {k: v for k, v in rest["metadata"].items()
                            if k not in IGNORED_ANNOTATIONS and k != SPEC_ID_LABEL}
    return {**obj, "spec": {**rest, "run": view}}
