"""Read a kubeconfig into the few facts a REST call needs (server, TLS, credentials).

Read as kubectl reads it: the files of ``KUBECONFIG`` merged with the first file winning per
cluster, user and context name and for ``current-context``; a relative path (CA, client
certificate and key, token file) resolved against the file that holds the entry;
``proxy-url``, else ``HTTPS_PROXY`` / ``NO_PROXY`` (``proxy.py``); ``tls-server-name``;
``insecure-skip-tls-verify``; impersonation (the user's ``as`` / ``as-groups``, overridden by
``--as`` / ``--as-group``, i.e. ``FTSPEC_KUBE_AS`` / ``FTSPEC_KUBE_AS_GROUPS``); and the
pod's service account when no kubeconfig exists and ``KUBERNETES_SERVICE_HOST`` is set
(``incluster.py``). ``exec`` and ``auth-provider`` users are left to the official client
(``needs_official_client``). Our own reader because the official client's loader costs
1-2 s to import; ``tests/integration/test_kubeconfig_conformance.py`` runs kubectl and this
reader on the same kubeconfigs against the real API server.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.spec.urls import url_problem


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
    user_name: str | None = None
    proxy_url: str | None = None
    tls_server_name: str | None = None
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()

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


MAX_KUBECONFIG_BYTES = 4 << 20
MAX_TOKEN_FILE_BYTES = 64 << 10
MAX_PEM_FILE_BYTES = 1 << 20


def _read_bytes(path: Path, limit: int, what: str) -> bytes:
    from ftspec.spec.bounded import InputRefused, read_bounded

    try:
        return read_bounded(path, limit, what)
    except InputRefused as exc:
        raise BackendError(f"{path}: {exc.message}", hint="check --kubeconfig / KUBECONFIG"
                           ) from None


def _read(path: Path, limit: int, what: str) -> str:
    try:
        return _read_bytes(path, limit, what).decode("utf-8")
    except UnicodeDecodeError:
        raise BackendError(f"{what} {path} is not UTF-8 text") from None


def _parse(path: Path) -> dict[str, Any]:
    """One kubeconfig file as a mapping; any other shape is a BackendError that names the
    file and line but never quotes its content (it holds credentials).

    Read with PyYAML's pure-Python safe loader: YAML 1.1 like kubectl's own reader (``yes``
    is true), plain values only, aliases shared rather than expanded, and nesting bounded by
    Python's recursion limit (libyaml's composer recurses on the C stack). A file that is a
    JSON object is read as JSON, as kubectl reads it (its reader turns YAML into JSON), and
    PyYAML is not imported for it (``_json_object``)."""
    text = _read(path, MAX_KUBECONFIG_BYTES, "kubeconfig")
    data = _json_object(text)
    if data is not None:
        return _checked(path, data)
    import yaml

    try:
        data = yaml.load(text, Loader=yaml.SafeLoader) if text.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise BackendError(f"kubeconfig {path} is not valid YAML{at}",
                           hint="check --kubeconfig / KUBECONFIG") from None
    return _checked(path, data)


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None where it is not one: then the YAML reader reads
    it as before, and reports where it fails. The JSON is read within the limits of the
    server's answers (``spec.jsonlimits``: nesting depth, number length, finite numbers);
    text beyond them goes to the YAML reader too."""
    if not text.lstrip().startswith("{"):
        return None
    from ftspec.spec.jsonlimits import loads_limited

    try:
        data = loads_limited(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _checked(path: Path, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BackendError(f"kubeconfig {path} is not a mapping (clusters, users, contexts)")
    for key in ("clusters", "users", "contexts"):
        entries = data.get(key) or []
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries):
            raise BackendError(f"kubeconfig {path}: {key} must be a list of entries, each "
                               "with a name")
    return data


ORIGIN = "\x00origin"
"""Key added to each merged entry: the folder of the file that defined it."""


def _load(files: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for path in files:
        if not path.exists():
            continue
        data = _parse(path)
        for key in ("clusters", "users", "contexts"):
            names = {e.get("name") for e in merged[key]}
            merged[key] += [{**e, ORIGIN: path.parent} for e in data.get(key) or []
                            if e.get("name") not in names]
        if not merged.get("current-context") and isinstance(data.get("current-context"), str):
            merged["current-context"] = data.get("current-context")
    return merged


class _KeyMaterial:
    """TLS files the HTTP client needs as paths: in one private folder (mode 0700, made by
    ``tempfile.mkdtemp``), each file created exclusively with mode 0600, the folder removed
    when the command ends — at exit, and on SIGTERM / SIGHUP before the signal takes its
    course. Never a shared, predictable name in /tmp. Files named in the kubeconfig are
    copied here too (read bounded), so OpenSSL never opens a FIFO or a device."""

    SIGNALS = ("SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.folder: Path | None = None
        self._previous: dict[int, Any] = {}

    def write(self, raw: bytes, suffix: str) -> str:
        import atexit

        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="ftspec-tls-"))
            atexit.register(self.remove)
            self._trap_signals()
        index = len(list(self.folder.iterdir()))
        path = self.folder / f"{index}{suffix}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        return str(path)

    def remove(self) -> None:
        import shutil

        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _trap_signals(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; atexit still cleans up
        for name in self.SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None or signum in self._previous:
                continue
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue
            self._previous[signum] = previous
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        import signal

        self.remove()
        previous = self._previous.pop(signum, signal.SIG_DFL)
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signum)  # the default action, now that the keys are gone


KEY_MATERIAL = _KeyMaterial()


def _materialize(data_b64: Any, file: Any, base: Path, suffix: str, what: str) -> str | None:
    import binascii

    if data_b64:
        try:
            raw = base64.b64decode(str(data_b64), validate=True)
        except (binascii.Error, ValueError):
            raise BackendError(f"kubeconfig {what} is not valid base64",
                               hint="check --kubeconfig / --context") from None
        return KEY_MATERIAL.write(raw, suffix)
    if file:
        path = Path(str(file)).expanduser()
        raw = _read_bytes(path if path.is_absolute() else base / path, MAX_PEM_FILE_BYTES,
                          what.removesuffix("-data") + " file")
        return KEY_MATERIAL.write(raw, suffix)
    return None


def _named(entries: list[dict[str, Any]], name: str, what: str, where: str) -> dict[str, Any]:
    """The entry's body, with the folder of its file under ``ORIGIN``."""
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(what) or {}
            return {**body, ORIGIN: entry[ORIGIN]} if isinstance(body, dict) else \
                {ORIGIN: entry[ORIGIN]}
    raise BackendError(f"kubeconfig has no {what} named {name!r} ({where})",
                       hint="check --kubeconfig / --context")


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    files = kubeconfig_files(kubeconfig)
    existing = [p for p in files if p.exists()]
    where = ", ".join(str(p) for p in files)
    if not existing and not kubeconfig:
        from ftspec.reconciler.kubernetes.incluster import in_cluster

        pod = in_cluster(_materialize)
        if pod is not None:
            return _impersonating(pod, {})
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
    user_base: Path = user.get(ORIGIN, existing[0].parent)
    base: Path = cluster.get(ORIGIN, existing[0].parent)
    token = user.get("token")
    who = f"kubeconfig user {str(ctx.get('user'))!r} of context {name!r} ({where})"
    if token is not None and not isinstance(token, str):
        raise BackendError(f"{who}: token must be a string")
    if not token and user.get("tokenFile"):
        token = _read(user_base / Path(str(user["tokenFile"])).expanduser(),
                      MAX_TOKEN_FILE_BYTES, "token file")
        who += f", tokenFile {str(user['tokenFile'])!r}"
    token = header_value(token, f"{who}: token") if token else token
    server = str(cluster.get("server") or "").rstrip("/")
    problem = url_problem(server) if server else "it is missing"
    if problem is not None:
        raise BackendError(f"kubeconfig cluster of context {name!r}: server is not a usable "
                           f"URL ({problem})", hint="check --kubeconfig / --context")
    from ftspec.reconciler.kubernetes.proxy import proxy_for

    tls_name = cluster.get("tls-server-name")
    conn = Connection(
        server=server,
        context=name,
        namespace=ctx.get("namespace"),
        token=token,
        ca_file=_materialize(cluster.get("certificate-authority-data"),
                             cluster.get("certificate-authority"), base, ".crt",
                             "certificate-authority-data"),
        cert_file=_materialize(user.get("client-certificate-data"),
                               user.get("client-certificate"), user_base, ".crt",
                               "client-certificate-data"),
        key_file=_materialize(user.get("client-key-data"), user.get("client-key"), user_base,
                              ".key", "client-key-data"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        config_files=tuple(str(p) for p in existing),
        user={k: v for k, v in user.items() if k != ORIGIN},
        user_name=str(ctx.get("user")) if ctx.get("user") else None,
        proxy_url=proxy_for(server, cluster.get("proxy-url")),
        tls_server_name=str(tls_name) if tls_name else None,
    )
    return _impersonating(conn, user)


def _impersonating(conn: Connection, user: dict[str, Any]) -> Connection:
    """The user's ``as`` / ``as-groups``, overridden by ``--as`` / ``--as-group``."""
    from dataclasses import replace

    as_user = os.environ.get("FTSPEC_KUBE_AS") or user.get("as")
    flag_groups = [g for g in os.environ.get("FTSPEC_KUBE_AS_GROUPS", "").split(",") if g]
    groups = flag_groups or [str(g) for g in user.get("as-groups") or []]
    if groups and not as_user:
        raise BackendError("impersonating groups needs a user to impersonate (--as)",
                           hint="add --as USER (kubectl refuses --as-group alone too)")
    return replace(conn, impersonate_user=header_value(str(as_user), "impersonated user (--as)",
                                                       spaces=True) if as_user else None,
                   impersonate_groups=tuple(header_value(g, "impersonated group (--as-group)",
                                                         spaces=True) for g in groups))


def header_value(value: str, what: str, *, spaces: bool = False) -> str:
    """A credential or name sent as an HTTP header: outer whitespace trimmed (a ``token: |``
    block scalar ends in a newline; client-go trims token files alike); whitespace (but
    spaces where ``spaces``: a group name may hold them) or control characters inside, or
    characters a header cannot carry, refused with where it was read, never with the value
    (an ``http.client`` error would quote the whole header)."""
    trimmed = value.strip()
    if any((c <= " " and not (spaces and c == " ")) or c == "\x7f" for c in trimmed) \
            or not trimmed.isascii():
        raise BackendError(f"{what} holds whitespace, control or non-ASCII characters inside "
                           "(the value is not shown)",
                           hint="write it on one line without spaces, as the server issued it")
    return trimmed
