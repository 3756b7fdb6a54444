"""Read a kubeconfig into the few facts a REST call needs (server, TLS, credentials).

Plain token / client-certificate / CA entries are handled here; ``exec`` and
``auth-provider`` users are left to the official client (``needs_official_client``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError


@dataclass(frozen=True)
class Connection:
    server: str
    context: str
    namespace: str | None
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False
    config_files: tuple[str, ...] = ()
    user: dict[str, Any] | None = None

    @property
    def needs_official_client(self) -> bool:
        return bool(self.user and ("exec" in self.user or "auth-provider" in self.user))


def kubeconfig_files(explicit: str | None) -> list[Path]:
    if explicit:
        return [Path(explicit).expanduser()]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def _load(files: list[Path]) -> dict[str, Any]:
    from ftspec.spec.loader import parse_yaml

    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for path in files:
        if not path.exists():
            continue
        data = parse_yaml(path.read_text(encoding="utf-8"), str(path)).data or {}
        for key in ("clusters", "users", "contexts"):
            names = {e.get("name") for e in merged[key]}
            merged[key] += [e for e in data.get(key) or [] if e.get("name") not in names]
        merged.setdefault("current-context", data.get("current-context"))
        if not merged.get("current-context"):
            merged["current-context"] = data.get("current-context")
    return merged


def _materialize(data_b64: str | None, file: str | None, base: Path, suffix: str) -> str | None:
    if data_b64:
        raw = base64.b64decode(data_b64)
        path = Path(tempfile.gettempdir()) / f"ftspec-{hashlib.sha256(raw).hexdigest()[:16]}{suffix}"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
        return str(path)
    if file:
        path = Path(file).expanduser()
        return str(path if path.is_absolute() else base / path)
    return None


def _named(entries: list[dict[str, Any]], name: str, what: str, where: str) -> dict[str, Any]:
    for entry in entries:
        if entry.get("name") == name:
            body = entry.get(what) or {}
            return body if isinstance(body, dict) else {}
    raise BackendError(f"kubeconfig has no {what} named {name!r} ({where})",
                       hint="check --kubeconfig / --context")


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    files = kubeconfig_files(kubeconfig)
    existing = [p for p in files if p.exists()]
    where = ", ".join(str(p) for p in files)
    if not existing:
        raise BackendError(f"no kubeconfig found (looked at {where})",
                           hint="pass --kubeconfig FILE or set KUBECONFIG")
    config = _load(existing)
    name = context or os.environ.get("FTSPEC_KUBE_CONTEXT") or config.get("current-context")
    if not name:
        raise BackendError(f"kubeconfig {where} has no current-context",
                           hint="pass --context NAME")
    ctx = _named(config["contexts"], name, "context", where)
    cluster = _named(config["clusters"], str(ctx.get("cluster")), "cluster", where)
    user = _named(config["users"], str(ctx.get("user")), "user", where) if ctx.get("user") else {}
    base = existing[0].parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text(encoding="utf-8").strip()
    return Connection(
        server=str(cluster.get("server", "")).rstrip("/"),
        context=name,
        namespace=ctx.get("namespace"),
        token=token,
        ca_file=_materialize(cluster.get("certificate-authority-data"),
                             cluster.get("certificate-authority"), base, ".crt"),
        cert_file=_materialize(user.get("client-certificate-data"),
                               user.get("client-certificate"), base, ".crt"),
        key_file=_materialize(user.get("client-key-data"), user.get("client-key"), base, ".key"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        config_files=tuple(str(p) for p in existing),
        user=user,
    )
