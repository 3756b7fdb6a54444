"""Kubeconfigs as kubectl reads them: kubectl and ftspec on the same kubeconfig files, flags and
environment, against the real API server. For each case both resolve the same server, user
and namespace (``kubectl config view --minify``), and both succeed or both fail to list
namespaces (``kubectl get --raw``; only cluster admins may, so the user really in effect —
impersonation included — decides). kubectl is part of this machine's toolset and required
here: the test fails, not skips, without it.

The forward proxy is ``harness.connect_proxy`` on loopback; it counts the tunnels each client
opened. The in-cluster case runs ftspec alone (kubectl reads a fixed mount point).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import controlplane_build
from harness.connect_proxy import ConnectProxy
from harness.kube import KubeCluster

pytestmark = pytest.mark.kube
LIST = "/api/v1/namespaces"


@dataclass
class Case:
    files: dict[str, dict[str, Any]]
    """relative path -> kubeconfig; KUBECONFIG lists them in this order."""
    expect_ok: bool
    flags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    extra: dict[str, bytes] = field(default_factory=dict)
    """Other files beside the kubeconfigs (relative path -> content)."""
    path_extra: str = ""
    """A folder (relative, like ``extra``'s files) put first on PATH."""


def _config(clusters: dict[str, dict[str, Any]], users: dict[str, dict[str, Any]],
            contexts: dict[str, dict[str, Any]], current: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Config",
                           "clusters": [{"name": k, "cluster": v} for k, v in clusters.items()],
                           "users": [{"name": k, "user": v} for k, v in users.items()],
                           "contexts": [{"name": k, "context": v} for k, v in contexts.items()]}
    if current:
        out["current-context"] = current
    return out


def _plugin(token: str) -> bytes:
    """An exec credential plugin (a path relative to the kubeconfig, as kubectl resolves it)."""
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1",
                  "kind": "ExecCredential", "status": {"token": token}}
    return f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n".encode()


def _cases(c: KubeCluster, proxy: ConnectProxy) -> dict[str, Case]:
    ca = str(c.ca_path)
    good = {"server": c.server, "certificate-authority": ca}
    bogus = {"server": "https://127.0.0.1:1", "certificate-authority": ca}
    admin, limited = {"token": c.token("admin")}, {"token": c.token("limited")}
    one = {"c": {"cluster": "k", "user": "u", "namespace": "team-a"}}
    return {
        "admin": Case({"a.yaml": _config({"k": good}, {"u": admin}, one, "c")}, True),
        "limited user": Case({"a.yaml": _config({"k": good}, {"u": limited}, one, "c")}, False),
        # first file wins per name: cluster k, user u and current-context come from a.yaml
        "merge first wins": Case({
            "a.yaml": _config({"k": good}, {"u": limited}, one, "c"),
            "b/b.yaml": _config({"k": bogus}, {"u": admin},
                                {"c": {"cluster": "k", "user": "u", "namespace": "other"},
                                 "d": {"cluster": "k", "user": "v"}}, "d")}, False),
        # entries only b.yaml has: its relative CA and token file resolve against b/
        "merge relative to own file": Case({
            "a.yaml": _config({}, {}, {}, "c"),
            "b/b.yaml": _config({"k": {"server": c.server,
                                       "certificate-authority": "relative-ca.crt"}},
                                {"u": {"tokenFile": "admin.token"}}, one)}, True,
            extra={"b/relative-ca.crt": c.ca_path.read_bytes(),
                   "b/admin.token": (c.token("admin") + "\n").encode()}),
        "context flag": Case({"a.yaml": _config({"k": good}, {"u": limited, "w": admin}, {
            **one, "x": {"cluster": "k", "user": "w"}}, "c")}, True, ["--context", "x"]),
        "missing context": Case({"a.yaml": _config({"k": good}, {"u": admin}, one, "nope")},
                                False),
        "insecure skip verify": Case({"a.yaml": _config(
            {"k": {"server": c.server, "insecure-skip-tls-verify": True}}, {"u": admin}, one,
            "c")}, True),
        "tls-server-name matches": Case({"a.yaml": _config(
            {"k": {**good, "tls-server-name": "localhost"}}, {"u": admin}, one, "c")}, True),
        "tls-server-name wrong": Case({"a.yaml": _config(
            {"k": {**good, "tls-server-name": "wrong.example"}}, {"u": admin}, one, "c")},
            False),
        "impersonate limited": Case({"a.yaml": _config(
            {"k": good}, {"u": {**admin, "as": "limited"}}, one, "c")}, False),
        "impersonate flag with admin group": Case({"a.yaml": _config(
            {"k": good}, {"u": admin}, one, "c")}, True,
            ["--as", "someone", "--as-group", "system:masters"]),
        "impersonate flag limited": Case({"a.yaml": _config(
            {"k": good}, {"u": admin}, one, "c")}, False, ["--as", "limited"]),
        "proxy-url": Case({"a.yaml": _config(
            {"k": {**good, "proxy-url": proxy.url}}, {"u": admin}, one, "c")}, True),
        "proxy-url down": Case({"a.yaml": _config(
            {"k": {**good, "proxy-url": "http://127.0.0.1:1"}}, {"u": admin}, one, "c")},
            False),
        "exec plugin": Case({"a.yaml": _config({"k": good}, {"u": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./plugin",
            "interactiveMode": "Never"}}}, one, "c")}, True,
            extra={"plugin": _plugin(c.token("admin"))}),
        "exec plugin as limited": Case({"a.yaml": _config({"k": good}, {"u": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./plugin",
            "interactiveMode": "Never"}}}, one, "c")}, False,
            extra={"plugin": _plugin(c.token("limited"))}),
        # the exec user only the second file defines (the plugin found on PATH): the
        # official client, which ftspec hands exec users to, merges every file too
        "exec plugin in the second file": Case({
            "a.yaml": _config({"k": good}, {}, one, "c"),
            "b/b.yaml": _config({}, {"u": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "ftspec-test-credential", "interactiveMode": "Never"}}}, {})}, True,
            extra={"bin/ftspec-test-credential": _plugin(c.token("admin"))},
            path_extra="bin"),
        # loopback servers never go through an environment proxy (Go's rule), NO_PROXY aside
        "HTTPS_PROXY skips loopback": Case({"a.yaml": _config(
            {"k": good}, {"u": admin}, one, "c")}, True, env={"HTTPS_PROXY": "http://127.0.0.1:1"}),
    }


def _kubectl(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = controlplane_build.binary("kubectl")  # built from the control plane's pinned Kubernetes
    if not exe.is_file():
        pytest.fail(f"kubectl is not built at {exe}: run `python tests/harness/controlplane_build.py build` "
                    "(tests/run.sh does)", pytrace=False)
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def _kubectl_view(case: Case, env: dict[str, str]) -> tuple[str, str, str] | None:
    context = case.flags[case.flags.index("--context") + 1] if "--context" in case.flags else None
    args = ["config", "view", "--minify", "-o", "json"] + (["--context", context] if context else [])
    out = _kubectl(args, env)
    if out.returncode != 0:
        return None
    view = json.loads(out.stdout)
    ctx = view["contexts"][0]["context"]
    return (view["clusters"][0]["cluster"]["server"], ctx.get("user", ""),
            ctx.get("namespace", ""))


def _ftspec(case: Case, env: dict[str, str]) -> tuple[tuple[str, str, str] | None, bool]:
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.kubernetes.kubeconfig import load_connection
    from ftspec.reconciler.kubernetes.transport import Transport

    context = case.flags[case.flags.index("--context") + 1] if "--context" in case.flags else None
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    if "--as" in case.flags:
        os.environ["FTSPEC_KUBE_AS"] = case.flags[case.flags.index("--as") + 1]
    if "--as-group" in case.flags:
        os.environ["FTSPEC_KUBE_AS_GROUPS"] = case.flags[case.flags.index("--as-group") + 1]
    try:
        try:
            conn = load_connection(None, context)
        except BackendError:
            return None, False
        resolved = (conn.server, conn.user_name or "", conn.namespace or "")
        try:
            Transport(conn, retries=0, timeout=10).request("GET", LIST, verb="list",
                                                           what="namespaces")
            return resolved, True
        except BackendError:
            return resolved, False
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _env(tmp: Path, case: Case) -> dict[str, str]:
    paths = []
    for rel, content in case.extra.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(content)
        if content.startswith(b"#!"):
            (tmp / rel).chmod(0o755)
    for rel, config in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config))
        paths.append(str(path))
    search = os.environ.get("PATH", "")
    if case.path_extra:
        search = f"{tmp / case.path_extra}{os.pathsep}{search}"
    return {"PATH": search, "HOME": str(tmp / "home"),
            "KUBECONFIG": os.pathsep.join(paths), **case.env}


def test_ftspec_reads_kubeconfigs_as_kubectl_does(kube_cluster: KubeCluster, tmp_path: Path,
                                                  record_property: Callable[[str, Any], None]
                                                  ) -> None:
    matrix = []
    with ConnectProxy() as proxy:
        for name, case in _cases(kube_cluster, proxy).items():
            folder = tmp_path / name.replace(" ", "-")
            folder.mkdir()
            env = _env(folder, case)
            before = len(proxy.tunnels)
            view = _kubectl_view(case, env)
            listed = _kubectl(["get", "--raw", LIST, *case.flags], env).returncode == 0
            kubectl_tunnels = len(proxy.tunnels) - before
            resolved, ok = _ftspec(case, env)
            ftspec_tunnels = len(proxy.tunnels) - before - kubectl_tunnels
            matrix.append((name, view, listed, resolved, ok))
            assert resolved == view, (name, view, resolved)
            assert (listed, ok) == (case.expect_ok, case.expect_ok), (name, listed, ok)
            if name == "proxy-url":
                assert kubectl_tunnels >= 1 and ftspec_tunnels >= 1, (kubectl_tunnels,
                                                                      ftspec_tunnels)
    record_property("matrix", matrix)
    print("\ncase | kubectl (server, user, ns) ok | ftspec (server, user, ns) ok")
    for name, view, listed, resolved, ok in matrix:
        print(f"{name} | {view} {listed} | {resolved} {ok}")


def test_in_cluster_service_account(kube_cluster: KubeCluster, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.reconciler.kubernetes.kubeconfig import load_connection
    from ftspec.reconciler.kubernetes.transport import Transport

    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(kube_cluster.token("admin"))
    shutil.copy(kube_cluster.ca_path, mount / "ca.crt")
    (mount / "namespace").write_text("ci-jobs\n")
    host, port = kube_cluster.server.removeprefix("https://").rsplit(":", 1)
    for key in ("KUBECONFIG", "FTSPEC_KUBE_CONTEXT", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setenv("FTSPEC_SERVICEACCOUNT_DIR", str(mount))
    conn = load_connection()
    assert (conn.server, conn.namespace, conn.context) == (kube_cluster.server, "ci-jobs",
                                                           "in-cluster")
    out = Transport(conn, retries=0).request("GET", LIST, verb="list", what="namespaces")
    assert out is not None and out["kind"] == "NamespaceList"
