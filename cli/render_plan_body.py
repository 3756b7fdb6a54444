"""The body of a created object in the human plan: short by default, whole with ``-v``.

A plan leads with the signal (the address, the action, the reason, the ``# ML:`` lines and the
changed values). A created object is shown by its own values; the generated launcher files
(multi-line text: the whole torchtune config, a script) are folded to their line count, and
the ML summary is one ``# ML:`` block instead of a row per key. ``plan -v``, ``apply -v`` and
``show --full`` print every attribute. Several runs created from one spec (a sweep's points)
are one block: "3 runs differing in learning rate (0.01, 0.003, 0.001)" and the body they
share. Drawn from ``Plan.to_json()`` only, as ``render_plan`` is.
"""

from __future__ import annotations

import json
from typing import Any

from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler.applied import RECORD_KEY
from ftspec.reconciler.fielddiff import leaves

ML_WIDTH = 96
"""Characters of ``# ML:`` text on one line before the summary wraps."""


def esc(text: str) -> str:
    return text.replace("[", r"\[")


def val(value: Any, indent: int = 8) -> str:
    """A value as Terraform shows it: JSON scalars, and heredocs for multi-line text."""
    if value is None:
        return "null"
    if isinstance(value, str) and "\n" in value.rstrip("\n"):
        pad = " " * (indent + 4)
        body = "\n".join(pad + line for line in value.rstrip("\n").split("\n"))
        return f"<<-EOT\n{body}\n{' ' * indent}EOT"
    return json.dumps(value, ensure_ascii=False)


def summary_of(after: dict[str, Any]) -> dict[str, str]:
    """The ML summary a created object carries: a local run's ``summary``, or the JSON of
    a Kubernetes object's summary annotation; empty when it has none."""
    own = after.get("summary")
    if isinstance(own, dict):
        return {str(k): str(v) for k, v in own.items()}
    annotations = (after.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(SUMMARY_ANNOTATION) if isinstance(annotations, dict) else None
    if isinstance(text, str):
        try:
            parsed = json.loads(text)
        except ValueError:
            return {}
        if isinstance(parsed, dict):
            return {str(k): str(v) for k, v in parsed.items()}
    return {}


def _is_summary(path: str, after: dict[str, Any]) -> bool:
    return SUMMARY_ANNOTATION in path or (isinstance(after.get("summary"), dict)
                                          and (path == "summary"
                                               or path.startswith(("summary.", "summary["))))


def _is_record(path: str) -> bool:
    return RECORD_KEY in path or path == "applied"


def _multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value.rstrip("\n")


def created_lines(after: dict[str, Any], *, verbose: bool,
                  per_run: frozenset[str] = frozenset()) -> list[str]:
    """The rows of a created object. Verbose: every attribute (ftspec's annotations named,
    not shown). Short: its own values, generated files folded, the summary left to the
    ``# ML:`` block, empty values and ftspec's record left out; ``per_run`` paths (a sweep's
    values that differ between its runs) say so instead of the first run's value."""
    lines = []
    hidden = 0
    for path, value in leaves(after):
        if verbose:
            if SUMMARY_ANNOTATION in path:
                value = "(ML summary)"
            elif _is_record(path):
                value = "(ftspec's record of this apply: version, spec, ML summary)"
            lines.append(f"      [green]+[/green] {esc(path)} = {esc(val(value))}")
            continue
        if _is_summary(path, after) or _is_record(path) or value in ([], {}, None, ""):
            hidden += 1
            continue
        if path in per_run:
            text = "[dim](differs per run)[/dim]"
        elif _multiline(value):
            count = len(value.rstrip("\n").split("\n"))
            text = f"[dim](generated, {count} lines; -v shows them)[/dim]"
        else:
            text = esc(val(value))
        lines.append(f"      [green]+[/green] {esc(path)} = {text}")
    if hidden:
        noun = "attribute" if hidden == 1 else "attributes"
        lines.append(f"        [dim]# ({hidden} more {noun} hidden; -v shows them)[/dim]")
    return lines


def summary_ml_lines(summary: dict[str, str], *, skip: frozenset[str] = frozenset()
                     ) -> list[str]:
    """The ML summary of a created run as ``# ML:`` lines, ``key value`` pairs joined by
    ``; `` and wrapped."""
    pairs = [f"{k} {v}" for k, v in summary.items() if k not in skip]
    lines: list[str] = []
    current = ""
    for pair in pairs:
        if current and len(current) + 2 + len(pair) > ML_WIDTH:
            lines.append(current + ";")
            current = pair
        else:
            current = f"{current}; {pair}" if current else pair
    if current:
        lines.append(current)
    return [f"    [cyan]# ML: {esc(line)}[/cyan]" for line in lines]


def _name(change: dict[str, Any]) -> str:
    """The run's name in its address (``local.run.NAME``, ``kubeflow.TrainJob.NS/NAME``)."""
    return str(change["address"]).split(".", 2)[-1].rpartition("/")[2]


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def varying(group: list[dict[str, Any]]) -> tuple[dict[str, list[str]], frozenset[str]]:
    """What differs between runs created from one spec (a sweep's grid): the ML summary
    keys, then the other values (a generated file's keys, by key: ``model.lora_dropout``)
    that the summary does not name, each with its distinct values in run order; and the
    attribute paths (identity included) whose values differ."""
    summaries = [summary_of(c["after"] or {}) for c in group]
    by_key = {k: _distinct([s.get(k, "null") for s in summaries]) for k in summaries[0]
              if len({s.get(k) for s in summaries}) > 1}
    rows = [dict(leaves(c["after"] or {})) for c in group]
    paths = frozenset(p for p in rows[0]
                      if any(r.get(p) != rows[0][p] for r in rows[1:]))
    said = {tuple(vs) for vs in by_key.values()}
    for path, values in _other_values(group, rows, paths).items():
        shown = _distinct(values)
        if tuple(shown) not in said and not _is_summary(path, group[0]["after"] or {}):
            by_key[path] = shown
            said.add(tuple(shown))
    return by_key, paths


def _other_values(group: list[dict[str, Any]], rows: list[dict[str, Any]],
                  paths: frozenset[str]) -> dict[str, list[str]]:
    """The values beside the summary that differ between the runs, not counting those
    that name the run itself (its id, folder, log): path -> one value per run."""
    out: dict[str, list[str]] = {}
    names = [_name(c) for c in group]
    for path in sorted(paths):
        values = [r.get(path) for r in rows]
        if _multiline(values[0]):
            out.update(_file_values(path, values, names))
        elif not _is_record(path) and not _own(values, names):
            out[path] = [json.dumps(v, ensure_ascii=False) for v in values]
    return out


def _own(values: list[Any], names: list[str]) -> bool:
    """Values that are each run's own rather than a setting: they name the run, or are
    paths (its folder, its log, its output under output.uri/<point>)."""
    texts = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values]
    return any(n in t or "/" in t for t, n in zip(texts, names))


def _file_values(path: str, texts: list[Any], names: list[str]) -> dict[str, list[str]]:
    """A generated file's keys whose values differ between the runs (files that parse as
    a mapping: ``reconciler.local.compare.file_changes``), the run's own name aside."""
    from ftspec.reconciler.local.compare import file_changes

    prefix = 'files["'
    if not path.startswith(prefix) or not all(isinstance(t, str) for t in texts):
        return {}
    name = path[len(prefix):].partition('"]')[0]
    per_run: dict[str, dict[int, Any]] = {}
    first: dict[str, Any] = {}
    for i, text in enumerate(texts[1:], start=1):
        for row in file_changes(name, texts[0], text):
            if row.path == path:  # not a mapping: compared whole, no key to name
                return {}
            key = row.path[len(path) + 1:]
            first[key] = row.before
            per_run.setdefault(key, {})[i] = row.after
    out = {}
    for key, changed in per_run.items():
        values = [first[key], *(changed.get(i, first[key]) for i in range(1, len(texts)))]
        if _own(values, names):
            continue
        out[key] = [str(v) for v in values]
    return out


def group_lines(group: list[dict[str, Any]], heading: str) -> list[str]:
    """Runs created from one spec (a sweep's points): one heading naming what differs, the
    addresses, the body they share and the shared ML summary."""
    by_key, paths = varying(group)
    differing = "; ".join(f"{k} ({', '.join(vs)})" for k, vs in by_key.items())
    head = f"  [bold]# {len(group)} runs of {esc(heading)} will be created"
    head += f"[/bold], differing in {esc(differing)}" if differing else "[/bold]"
    lines = [head]
    lines += [f"  [dim]#   {esc(c['address'])}[/dim]" for c in group]
    first = group[0]
    kind_name = first["address"].partition(".")[2]
    kind = kind_name.partition(".")[0]
    lines.append(f"[green]  +[/green] resource \"{kind}\" \"(each run)\" {{")
    lines += created_lines(first["after"] or {}, verbose=False, per_run=paths)
    lines.append("    }")
    lines += summary_ml_lines(summary_of(first["after"] or {}), skip=frozenset(by_key))
    return lines
