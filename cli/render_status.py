"""The human view of `ftspec status` (and the end of `apply --wait`), drawn from the same
JSON that `status --json` prints."""

from __future__ import annotations

from typing import Any

from ftspec.cli.output import MAX_MESSAGE_CHARS, capped
from ftspec.reconciler.failure import describe
from ftspec.reconciler.model import Status
from ftspec.reconciler.pace import duration, position, timing
from ftspec.reconciler.progress import sparkline
from rich.markup import escape

COLORS = {"Succeeded": "green", "Failed": "red", "Running": "cyan", "Pending": "yellow"}
VERBOSE_ONLY = ("pid", "pgid", "argv", "log_tail", "spec_hash", "entrypoint")
_WHOLE = "; `ftspec status --json` has it whole"


def status_json(s: Status) -> dict[str, Any]:
    out = {"address": s.address, "phase": s.phase.value, "message": s.message,
           "metrics": s.metrics, "outputs": s.outputs, "platform": s.platform}
    if s.reason:
        out["reason"] = s.reason
    return out


def render_status(data: dict[str, Any], verbose: bool = False) -> list[str]:
    """Rich-markup lines for one job."""
    phase = data["phase"]
    color = COLORS.get(phase, "white")
    m = data.get("metrics") or {}
    head = f"[bold]{escape(data['address'])}[/bold]  [{color} bold]{phase}[/{color} bold]"
    where = _steps(m)
    if where:
        head += f"  {where}"
    lines = [head]
    if m.get("loss") is not None:
        losses = [x for x in (m.get("curve") or {}).get("loss") or [] if x is not None]
        loss = f"  loss {m['loss']:.4f}"
        if len(losses) > 1:
            loss += f"  {sparkline(losses)}  ({losses[0]:.2f} → {losses[-1]:.2f}"
            loss += f", {m['trend']})" if m.get("trend") else ")"
        if m.get("lr") is not None:
            loss += f"  lr {m['lr']:.2e}"
        lines.append(loss)
    state = capped(str(data.get("message") or ""), MAX_MESSAGE_CHARS, _WHOLE)
    lines.append(f"  state: {escape(state)}")
    why = data.get("reason") or {}
    if why:
        told = capped(describe(why), MAX_MESSAGE_CHARS, _WHOLE)
        lines.append(f"  [red]reason ({why.get('validity')}):[/red] {escape(told)}")
    nodes = (data.get("platform") or {}).get("nodes") or []
    if nodes:
        lines.append(f"  nodes: {escape(', '.join(_node(n) for n in nodes))}")
    out = data.get("outputs") or {}
    if out:
        lines.append(f"  outputs: {escape(_outputs(out))}")
    if verbose:
        for key, value in (data.get("platform") or {}).items():
            if value in (None, "", [], {}):
                continue
            if isinstance(value, (list, tuple)):
                lines.append(f"    {key}:")
                lines += [f"      {escape(str(item))}" for item in value]
            else:
                lines.append(f"    {key}: {escape(platform_value(key, value))}")
    return lines


def platform_value(key: str, value: Any, now: float | None = None) -> str:
    """A platform detail as a person reads it: a moment (``started_at``, Ray's ``start_time``
    in milliseconds) as a UTC time and how long ago, a duration in seconds (``*_s``) as
    ``2m 05s``; anything else as it is."""
    import time

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key.endswith(("_at", "_time")) and value > 1e9:
        seconds = value / 1000 if value > 1e11 else float(value)  # Ray counts milliseconds
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))
        ago = (time.time() if now is None else now) - seconds
        return f"{stamp} ({duration(ago)} ago)" if ago >= 0 else stamp
    if key.endswith("_s"):
        return str(duration(value))
    return str(value)


def _node(n: dict[str, Any]) -> str:
    """One node of a multi-node Ray run: ``1 FAILED on 10.0.0.2 (exit -9)``."""
    text = f"{n.get('rank')} {n.get('state')}"
    if n.get("node"):
        text += f" on {n['node']}"
    if n.get("exit_code") not in (None, "0"):
        text += f" (exit {n['exit_code']})"
    return text


def _steps(m: dict[str, Any]) -> str:
    return " · ".join(position(m) + timing(m))


def _outputs(out: dict[str, Any]) -> str:
    text = str(out.get("uri") or out.get("path") or "")
    if out.get("path") and out.get("uri") and out.get("kind") != "file":
        text += f" (mounted at {out['path']})"
    if out.get("adapter"):
        text += f"; adapter {out['adapter']}"
    if out.get("model"):
        text += f"; model {out['model']}"
    if out.get("hub_repo"):
        text += f"; hub {out['hub_repo']}"
    if out.get("exists") is False:
        text += " (nothing written yet)"
    return text
