"""Terraform-style human view of a plan, drawn from ``Plan.to_json()`` (the --json data)."""

from __future__ import annotations

import json
from typing import Any

from ftspec.cli.render_plan_body import created_lines, group_lines, summary_ml_lines, summary_of
from ftspec.cli.render_plan_body import esc as _esc
from ftspec.cli.render_plan_body import val as _val
from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler.fielddiff import count_leaves, leaves

SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "no-op": " "}
STYLE = {"create": "green", "update": "yellow", "replace": "red", "delete": "red",
         "no-op": "dim"}
VERB = {"create": "will be created", "update": "will be updated in-place",
        "replace": "must be replaced", "delete": "will be destroyed"}


def _text_diff(before: str, after: str, indent: int = 8) -> str:
    """Changed lines of multi-line text, with one line of context (Terraform-style)."""
    import difflib

    pad = " " * (indent + 4)
    rows = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=1,
                                     lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            rows.append(f"{pad}# (…)")
        elif line.startswith("+"):
            rows.append(f"{pad[:-2]}[green]+[/green] {_esc(line[1:])}")
        elif line.startswith("-"):
            rows.append(f"{pad[:-2]}[red]-[/red] {_esc(line[1:])}")
        else:
            rows.append(f"{pad}{_esc(line[1:])}")
    return "<<-EOT\n" + "\n".join(rows) + f"\n{' ' * indent}EOT"


def _list_diff(before: list[Any], after: list[Any], indent: int = 8) -> str:
    """Changed list elements only, unchanged runs folded (Terraform-style)."""
    import difflib

    pad = " " * (indent + 4)
    old = [json.dumps(v, ensure_ascii=False) for v in before]
    new = [json.dumps(v, ensure_ascii=False) for v in after]
    rows = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.append(f"{pad}[dim]# ({i2 - i1} unchanged element"
                        f"{'s' if i2 - i1 != 1 else ''} hidden)[/dim]")
            continue
        rows += [f"{pad[:-2]}[red]-[/red] {_esc(v)}," for v in old[i1:i2]]
        rows += [f"{pad[:-2]}[green]+[/green] {_esc(v)}," for v in new[j1:j2]]
    return "[\n" + "\n".join(rows) + f"\n{' ' * indent}]"


def _resource(address: str) -> tuple[str, str]:
    _target, _, rest = address.partition(".")
    kind, _, name = rest.partition(".")
    return kind, name


def _change_lines(ch: dict[str, Any], verbose: bool) -> list[str]:
    """One change: its notes, its resource block with the attributes that change (a
    created object: its short body, or every attribute when verbose), and its ML changes."""
    action = ch["action"]
    style = STYLE[action]
    kind, name = _resource(ch["address"])
    lines = _notes(ch)
    sym = SYMBOL[action]
    lines.append(f"[{style}]{sym:>3}[/{style}] resource \"{kind}\" \"{_esc(name)}\" {{")
    if action == "create":
        lines += created_lines(ch["after"] or {}, verbose=verbose)
    elif action == "delete":
        lines += _deleted_lines(ch["before"] or {})
    else:
        lines += _updated_lines(ch.get("fields") or [], ch["before"] or {})
    lines.append("    }")
    for ml in ch.get("ml_changes") or []:
        lines.append(f"    [cyan]# ML: {_esc(ml)}[/cyan]")
    if action == "create" and not verbose:
        lines += summary_ml_lines(summary_of(ch["after"] or {}))
    return lines


def _notes(ch: dict[str, Any]) -> list[str]:
    """The change's heading, then why: drift, the reason of a replace or delete, an upgrade."""
    action = ch["action"]
    lines = [f"  [bold]# {_esc(ch['address'])}[/bold] {VERB[action]}"]
    if ch.get("drift"):
        lines.append("  [yellow]# (live object changed outside ftspec since the last apply)"
                     "[/yellow]")
    if ch.get("reason") and action in ("replace", "delete"):
        lines.append(f"  [dim]# ({_esc(ch['reason'])})[/dim]")
    if ch.get("upgrade"):
        lines.append(f"  [yellow]# ({_esc(ch['upgrade'])})[/yellow]")
    return lines


def _deleted_lines(before: dict[str, Any]) -> list[str]:
    """A deleted object's identity and spec; the count of the other attributes."""
    lines = []
    for path, value in leaves(before):
        if path.startswith(("spec", "metadata.name", "metadata.namespace", "kind")):
            lines.append(f"      [red]-[/red] {_esc(path)} = {_esc(_val(value))}")
    hidden = count_leaves(before) - len(lines)
    if hidden > 0:
        lines.append(f"        [dim]# ({hidden} unchanged attributes hidden)[/dim]")
    return lines


def _updated_lines(fields: list[dict[str, Any]], before: dict[str, Any]) -> list[str]:
    """The changed fields of an updated or replaced object; the count of the others."""
    lines = [_field_line(f) for f in fields]
    hidden = max(count_leaves(before) - len(fields), 0)
    if hidden:
        lines.append(f"        [dim]# ({hidden} unchanged attributes hidden)[/dim]")
    return lines


def _field_line(f: dict[str, Any]) -> str:
    """One changed field: multi-line text and lists as diffs, other values before -> after."""
    before, after = f.get("before"), f.get("after")
    path = _esc(f["path"])
    tail = " [red]# forces replacement[/red]" if f.get("forces_replace") else ""
    if before is not None and after is not None:
        if isinstance(before, str) and isinstance(after, str) and "\n" in before + after:
            return f"      [yellow]~[/yellow] {path} = {_text_diff(before, after)}"
        if isinstance(before, list) and isinstance(after, list):
            return f"      [yellow]~[/yellow] {path} = {_list_diff(before, after)}{tail}"
    mark, text = _scalar_change(before, after)
    if SUMMARY_ANNOTATION in f["path"]:
        text = "(ML summary changed, see the # ML lines below)"
    return f"      {mark} {path} = {_esc(text)}{tail}"


def _scalar_change(before: Any, after: Any) -> tuple[str, str]:
    """The mark and text of a value added, removed or changed."""
    if before is None:
        return "[green]+[/green]", _val(after)
    if after is None:
        return "[red]-[/red]", f"{_val(before)} -> null"
    return "[yellow]~[/yellow]", f"{_val(before)} -> {_val(after)}"


def summary_counts(data: dict[str, Any]) -> tuple[int, int, int]:
    add = change = destroy = 0
    for ch in data["changes"]:
        action = ch["action"]
        add += action in ("create", "replace")
        change += action == "update"
        destroy += action in ("delete", "replace")
    return add, change, destroy


def _blocks(changes: list[dict[str, Any]], verbose: bool) -> list[list[str]]:
    """The changes' blocks in plan order; runs created from one spec file (a sweep's
    points) are one block where the view is short."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for ch in changes:
        spec = ch.get("spec_file") or (ch.get("after") or {}).get("spec_file")
        if ch["action"] == "create" and not verbose and isinstance(spec, str):
            groups.setdefault(spec, []).append(ch)
    blocks: list[list[str]] = []
    done: set[str] = set()
    for ch in changes:
        spec = ch.get("spec_file") or (ch.get("after") or {}).get("spec_file")
        group = groups.get(spec) if isinstance(spec, str) else None
        if group is None or len(group) < 2 or ch not in group:
            blocks.append(_change_lines(ch, verbose))
        elif isinstance(spec, str) and spec not in done:
            done.add(spec)
            blocks.append(group_lines(group, spec))
    return blocks


def render_plan(data: dict[str, Any], *, saved_to: str | None = None,
                destroy: bool = False, out_hint: bool = True, verbose: bool = False) -> str:
    """Rich markup text for a plan (``Plan.to_json()``): the signal by default, every
    attribute of a created object with ``verbose`` (``cli.render_plan_body``). ``destroy``:
    the plan of ``destroy`` (its "No changes" says nothing is there to destroy);
    ``out_hint``: end with the note that an unsaved plan is not bound (not for a saved plan
    shown or applied, nor for destroy, which has no ``--out``)."""
    out: list[str] = []
    for warning in data.get("warnings") or []:
        out.append(f"[yellow]Warning:[/yellow] {_esc(warning)}")
    changes = [c for c in data["changes"] if c["action"] != "no-op"]
    drifted = [c for c in changes if c.get("drift")]
    if drifted:
        out += ["", "[bold]Note: Objects have changed outside of ftspec[/bold]", "",
                ("ftspec detected the following changes made outside of ftspec since the last "
                "\"ftspec apply\":")]
        for c in drifted:
            out.append(f"  [yellow]~[/yellow] {_esc(c['address'])}: {_esc(c.get('reason') or '')}")
    moves = [c for c in data["changes"] if c.get("moved_from")]
    if moves:
        out += ["", ("[bold]Moved:[/bold] these runs are known by a new identity (nothing is "
                     "retrained; apply records them under it where the platform can):")]
        for c in moves:
            head = _esc(c["address"]) if c["moved_from"] == c["address"] else \
                f"{_esc(c['moved_from'])} has moved to {_esc(c['address'])}"
            out.append(f"  [cyan]>[/cyan] {head} [dim]# {_esc(c.get('moved') or '')}[/dim]")
    if not changes and destroy:
        out += ["", "[green bold]No changes.[/green bold] No objects need to be destroyed.",
                "", ("Either these specs were never applied, or their live objects were "
                     "already deleted.")]
        return "\n".join(out)
    if not changes:
        out += ["", "[green bold]No changes.[/green bold] Your live objects match the spec.",
                "", ("ftspec has compared the spec with the live objects and found no "
                "differences, so no changes are needed.")]
        return "\n".join(out)
    symbols = sorted({c["action"] for c in changes}, key=list(SYMBOL).index)
    legend = {"create": "create", "update": "update in-place",
              "replace": "destroy and then create replacement", "delete": "destroy"}
    out += ["", ("ftspec used the live objects to make the following execution plan. Resource "
            "actions are indicated with the following symbols:")]
    for action in symbols:
        out.append(f"  [{STYLE[action]}]{SYMBOL[action]}[/{STYLE[action]}] {legend[action]}")
    out += ["", "ftspec will perform the following actions:", ""]
    for block in _blocks(changes, verbose):
        out += block + [""]
    add, change, destroy_n = summary_counts(data)
    noun = "Plan"
    out.append(f"[bold]{noun}:[/bold] {add} to add, {change} to change, {destroy_n} to destroy.")
    estimate = data.get("estimate")
    if isinstance(estimate, dict) and estimate.get("line"):
        out.append(_esc(str(estimate["line"])))
    if saved_to:
        out += ["", f"Saved the plan to: {_esc(saved_to)}", "",
                "To perform exactly these actions, run the following command to apply:",
                f"    ftspec apply --plan {_esc(saved_to)}"]
    elif out_hint and not destroy:
        out += ["", "─" * 77, "",
                ("Note: You didn't use the --out option to save this plan, so ftspec can't "
                "guarantee to take exactly these actions if you run \"ftspec apply\" now.")]
    return "\n".join(out)
