"""The TrainJob a file holds, as a :class:`SourceDoc` with its own line numbers.

Kubeflow's examples often ship the TrainJob with its runtime, a ConfigMap or a PVC in one
multi-document file (``---``). ftspec's loader reads one document, so the other documents'
lines are blanked (kept as empty lines) before parsing: every position stays the file's.
A file with no ``trainer.kubeflow.org/v1alpha1`` TrainJob is not this tool's config.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import not_this_tool
from ftspec.spec.diagnostics import Diagnostic, Severity, Span, SpecError
from ftspec.spec.loader import SourceDoc, parse_yaml, read_spec_text
from ftspec.spec.platforms import TRAINER_API

API = TRAINER_API
_SEPARATOR = re.compile(r"^---(\s|$)")
_KIND = re.compile(r"^kind:\s*['\"]?TrainJob['\"]?\s*(#.*)?$")


def load_trainjob(path: Path) -> SourceDoc:
    text = read_spec_text(path)
    docs = _documents(text)
    found = [i for i, lines in enumerate(docs) if any(_KIND.match(ln) for _, ln in lines)]
    if len(found) > 1:
        line = docs[found[1]][0][0] if docs[found[1]] else 1
        raise SpecError([Diagnostic(Severity.ERROR, "the file holds more than one TrainJob",
                                    span=Span(str(path), line, 1), code="import.shape",
                                    hint="import one TrainJob at a time (split the file)")])
    keep = docs[found[0]] if found else docs[0] if docs else []
    kept = {number for number, _ in keep}
    blanked = "\n".join(line if i + 1 in kept else ""
                        for i, line in enumerate(text.splitlines()))
    doc = parse_yaml(blanked + "\n", str(path))
    check_is_trainjob(doc)
    return doc


_TOP_KIND = re.compile(r"^kind:\s*['\"]?([A-Za-z0-9]+)")
_NAME = re.compile(r"^\s{2}name:\s*['\"]?([A-Za-z0-9.-]+)")


def other_objects(path: Path) -> list[Diagnostic]:
    """A warning at each object of the file other than the TrainJob (a runtime, a ConfigMap,
    a PVC): the import reads the TrainJob only."""
    out = []
    for lines in _documents(read_spec_text(path)):
        kinds = [(n, m.group(1)) for n, ln in lines for m in [_TOP_KIND.match(ln)] if m]
        if not kinds or kinds[0][1] == "TrainJob":
            continue
        line, kind = kinds[0]
        name = next((m.group(1) for _, ln in lines for m in [_NAME.match(ln)] if m), "")
        why = ("the TrainJob's runtimeRef names it, and ftspec applies the TrainJob only: "
               "apply the runtime yourself"
               if kind.endswith("TrainingRuntime") else "apply it yourself")
        out.append(Diagnostic(Severity.WARNING, f"the file also holds {kind} {name}: not "
                              f"imported ({why})", span=Span(str(path), line, 1),
                              code="import.not-expressed"))
    return out


def _documents(text: str) -> list[list[tuple[int, str]]]:
    """Lines (1-based number, text) of each document, separators left out."""
    docs: list[list[tuple[int, str]]] = [[]]
    for number, line in enumerate(text.splitlines(), start=1):
        if _SEPARATOR.match(line):
            docs.append([])
        else:
            docs[-1].append((number, line))
    return [d for d in docs if any(ln.strip() and not ln.lstrip().startswith("#")
                                   for _, ln in d)]


def check_is_trainjob(doc: SourceDoc) -> None:
    data: Any = doc.data
    if not isinstance(data, dict) or data.get("kind") != "TrainJob":
        where = ("kind",) if isinstance(data, dict) and "kind" in data else ()
        raise not_this_tool(doc, where, "not a TrainJob: no document of kind TrainJob",
                            f"give a Kubeflow Trainer TrainJob ({API})")
    if data.get("apiVersion") != API:
        raise not_this_tool(doc, ("apiVersion",), f"TrainJob apiVersion "
                            f"{data.get('apiVersion')!r} is not {API}",
                            "ftspec reads Kubeflow Trainer v2 TrainJobs")
    spec = data.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("runtimeRef"), dict) or \
            not spec["runtimeRef"].get("name"):
        raise not_this_tool(doc, ("spec",) if "spec" in data else ("kind",),
                            "the TrainJob has no spec.runtimeRef.name",
                            "a TrainJob references the (Cluster)TrainingRuntime it runs on")
