"""The pinned kube-apiserver + etcd on loopback, with the upstream Trainer/KubeRay CRDs.

The binaries are those of ``controlplane_build`` (``k8s.io/kubernetes`` at ``PINS.kubernetes``,
built once per pin set); the CRDs are installed verbatim, so the server enforces their CEL rules
itself. ``RealCluster`` (``realcluster.py``) adds the controllers on top of the same server.

Library::

    from harness.kube import KubeCluster
    with KubeCluster() as cluster:   # builds once (cached by pins), then a few seconds
        cluster.kubeconfig_path, cluster.server, cluster.token("limited")

Script::

    python tests/harness/kube.py build            # build the pinned control plane (cached)
    python tests/harness/kube.py start            # detached cluster; prints KUBECONFIG=...
    python tests/harness/kube.py stop             # stops the cluster started by `start`

No Kubernetes controllers run (no controller-manager, no Kubeflow/KubeRay operators): namespaces
are finalised by ``delete_namespace`` itself, ownerReferences never cascade, and status must be
written by the test (``patch_status``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # script mode: make `import harness` work, drop tests/harness from sys.path
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self

import yaml

from harness import controlplane_build, procs, snapshots
from harness.controlplane_build import BuildError, build
from harness.kubeapi import APPLY_PATCH, MERGE_PATCH, KubeApi, KubeApiError
from harness.upstream import (
    DEFAULT_RUNTIME_PATTERNS,
    TRAINJOB_CRD_FILE,
    UpstreamMissing,
    crd_paths,
    load_yaml_documents,
    require_upstream_dir,
    runtime_paths,
    trainjob_crd_path,
)

__all__ = [
    "BuildError",
    "KubeApiError",
    "KubeCluster",
    "UpstreamMissing",
    "apiserver_command",
    "build",
]

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TRAINJOB_CRD_NAME = "trainjobs.trainer.kubeflow.org"
STATE_FILE_NAME = "cluster.json"

_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = ftspec-test
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
"""


def apiserver_command(binary: Path, folder: Path, etcd_port: int, port: int, extra: Sequence[str] = ()) -> list[str]:
    """The kube-apiserver command line of every test cluster (``KubeCluster`` and ``RealCluster``).

    ``folder`` holds the credentials ``KubeCluster._write_credentials`` made; ``extra`` adds
    flags, and one naming a flag already set replaces it."""
    flags = [
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--tls-cert-file={folder / 'server.crt'}",
        f"--tls-private-key-file={folder / 'server.key'}",
        f"--client-ca-file={folder / 'ca.crt'}",
        f"--token-auth-file={folder / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={folder / 'sa.key'}",
        f"--service-account-signing-key-file={folder / 'sa.key'}",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--enable-priority-and-fairness=false",
        "--endpoint-reconciler-type=none",  # loopback endpoints are invalid for the kubernetes service
        "--profiling=false",
    ]
    names = {flag.split("=", 1)[0] for flag in extra}
    return [str(binary), *(f for f in flags if f.split("=", 1)[0] not in names), *extra]


class KubeCluster:
    """etcd + kube-apiserver on free loopback ports, with token users and the upstream CRDs.

    Users (static tokens): ``admin`` (group ``system:masters``), ``limited`` and ``limited2``
    (only ``system:authenticated``; tests grant them Roles). The kubeconfig has one context per
    user (``admin`` is current) and verifies TLS against a generated CA (``ca_path``).
    """

    USERS: tuple[str, ...] = ("admin", "limited", "limited2")

    def __init__(
        self,
        *,
        upstream: Path | None = None,
        trainjob_crd_version: str | None = None,
        install_crds: bool = True,
        runtime_patterns: Sequence[str] = DEFAULT_RUNTIME_PATTERNS,
        detach: bool = False,
        use_snapshot: bool | None = None,
        apiserver_flags: Sequence[str] = (),
    ) -> None:
        """``trainjob_crd_version``: None/"master" = the default copy, else a folder such as "v2.1.0".
        ``runtime_patterns``: globs in ``kubeflow-trainer/runtimes`` to create (needs ``install_crds``).
        ``detach``: processes outlive this Python process (used by the ``start`` command).
        ``use_snapshot``: start from / save a cached etcd data dir with the CRDs installed
        (default: on unless ``FTSPEC_KUBE_SNAPSHOT=0``); see ``harness.snapshots``.
        ``apiserver_flags``: more kube-apiserver flags; one naming a flag already set replaces
        it (``--enable-priority-and-fairness=true --max-requests-inflight=2``: bench/kube_load.py)."""
        self._apiserver_flags = tuple(apiserver_flags)
        self._upstream_arg = upstream
        self._trainjob_version = trainjob_crd_version
        self._install_crds = install_crds
        self._runtime_patterns = tuple(runtime_patterns)
        self._detach = detach
        self._tmp: Path | None = None
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._apiserver_cmd: list[str] = []
        self._tokens: dict[str, str] = {}
        self._etcd_port = 0
        self._peer_port = 0
        self._port = 0
        self._use_snapshot = use_snapshot if use_snapshot is not None else snapshots.enabled()
        self._discovery: dict[str, list[dict[str, Any]]] = {}
        self.start_count = 0
        """Incremented by every ``start()``; a fixture can detect that the cluster was recreated."""
        self.installed_trainjob_crd_version: str | None = None
        self.startup_seconds: float = 0.0

    # ------------------------------------------------------------------ properties

    @property
    def running(self) -> bool:
        return (
            self._etcd is not None
            and self._etcd.poll() is None
            and self._apiserver is not None
            and self._apiserver.poll() is None
        )

    @property
    def started(self) -> bool:
        """Started and not stopped since (processes may have died or been killed)."""
        return self._tmp is not None

    @property
    def server(self) -> str:
        self._require_started()
        return f"https://127.0.0.1:{self._port}"

    @property
    def etcd_url(self) -> str:
        self._require_started()
        return f"http://127.0.0.1:{self._etcd_port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self._require_started() / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        return self._require_started() / "ca.crt"

    @property
    def tmp_dir(self) -> Path:
        return self._require_started()

    @property
    def upstream_dir(self) -> Path:
        return require_upstream_dir(self._upstream_arg)

    def token(self, user: str = "admin") -> str:
        self._require_started()
        try:
            return self._tokens[user]
        except KeyError:
            raise KeyError(f"unknown user {user!r}; users: {list(self.USERS)}") from None

    def env(self, user: str = "admin") -> dict[str, str]:
        """Environment entries pointing a subprocess (kubectl, ftspec) at this cluster as ``user``."""
        return {"KUBECONFIG": str(self.kubeconfig_path if user == "admin" else self.kubeconfig_for(user))}

    def kubeconfig_for(self, user: str) -> Path:
        """A kubeconfig like ``kubeconfig_path`` whose current context is ``user``."""
        self.token(user)  # validates the name
        path = self._require_started() / f"kubeconfig-{user}"
        if not path.exists():
            config = yaml.safe_load(self.kubeconfig_path.read_text())
            config["current-context"] = user
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            path.chmod(0o600)
        return path

    def api(self, user: str = "admin") -> KubeApi:
        return KubeApi(self.server, self.token(user), self.ca_path)

    def pids(self) -> list[int]:
        procs_ = (self._etcd, self._apiserver)
        return [p.pid for p in procs_ if p is not None and p.poll() is None]

    def rss_bytes(self) -> int:
        """Resident memory (VmRSS sum) of etcd + kube-apiserver now."""
        return procs.rss_bytes(self.pids())

    def pss_bytes(self) -> int:
        """Proportional memory (PSS sum) of etcd + kube-apiserver now."""
        return procs.pss_bytes(self.pids())

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Start etcd + kube-apiserver and install the upstream CRDs/runtimes (no-op if running).

        If only the API server is down (``kill_apiserver``), it is restarted on the same etcd."""
        if self.running:
            return self
        if self._tmp is not None:
            if self._etcd is not None and self._etcd.poll() is None and self._apiserver_cmd:
                self.restart_apiserver()
                return self
            self.stop()
        build()  # the pinned control plane: cached after the first build
        upstream = require_upstream_dir(self._upstream_arg) if self._install_crds else None
        snapshot = self._snapshot_key(upstream) if upstream is not None and self._use_snapshot else None
        started = time.monotonic()
        restored = False
        self._tmp = procs.make_owned_tempdir("ftkube-", detached=self._detach)
        if not self._detach:
            procs.register_cleanup(self, self.stop)
        try:
            self._write_credentials()
            for attempt in range(3):
                shutil.rmtree(self._tmp / "etcd", ignore_errors=True)
                restored = snapshot is not None and snapshots.restore(snapshot, self._tmp / "etcd")
                self._etcd_port, self._peer_port, self._port = procs.free_ports(3)
                try:
                    self._start_etcd()
                    self._start_apiserver()
                    break
                except _PortInUse as err:
                    procs.log(f"port clash ({err}); retrying with new ports (attempt {attempt + 1})")
                    self._stop_processes()
            else:
                raise RuntimeError("could not start etcd/kube-apiserver: ports kept clashing")
            self._write_kubeconfig()
            self._discovery.clear()
            if restored:
                self._wait_crds_served()
                self.installed_trainjob_crd_version = self._normalized_version
            elif upstream is not None:
                self._install_upstream(upstream)
                if snapshot is not None:
                    self._save_snapshot(snapshot)
        except BaseException:
            self.stop()
            raise
        self.start_count += 1
        self.startup_seconds = time.monotonic() - started
        how = "from snapshot" if restored else "fresh"
        procs.log(
            f"kube-apiserver up at {self.server} ({how}) in {self.startup_seconds:.1f} s; "
            f"KUBECONFIG={self.kubeconfig_path}"
        )
        return self

    def stop(self) -> None:
        """Stop kube-apiserver then etcd (SIGTERM, then SIGKILL) and delete the temp dir."""
        procs.unregister_cleanup(self)
        self._stop_processes()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._discovery.clear()

    def kill_apiserver(self) -> None:
        """SIGKILL the API server (a crash); etcd keeps running with all objects."""
        if self._apiserver is not None and self._apiserver.poll() is None:
            procs.stop_process(self._apiserver, sig=signal.SIGKILL)

    def restart_apiserver(self) -> None:
        """Start the API server again on the same port with the same etcd; wait until ready."""
        self._require_started()
        if self._apiserver is not None and self._apiserver.poll() is None:
            procs.stop_process(self._apiserver)
        self._launch_apiserver()
        self._wait_crds_served()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ API helpers

    def request(
        self, method: str, path: str, body: Any = None, *, user: str = "admin", content_type: str = "application/json"
    ) -> dict[str, Any]:
        """Raw request as ``user``; raises ``KubeApiError`` (with ``.status``) on HTTP >= 400."""
        return self.api(user).request(method, path, body, content_type=content_type)

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> str:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        self.request("POST", "/api/v1/namespaces", body)
        return name

    def delete_namespace(self, name: str, *, timeout: float = 60.0) -> None:
        """Delete a namespace completely, doing what the (absent) namespace controller would:
        delete every namespaced collection in it, then remove the ``kubernetes`` finalizer."""
        api = self.api()
        ns_path = f"/api/v1/namespaces/{name}"
        if not api.exists(ns_path):
            return
        for base, resource in self._namespaced_collections():
            try:
                api.request("DELETE", f"{base}/namespaces/{name}/{resource}")
            except KubeApiError as err:
                if err.status not in (404, 405):
                    raise
        try:
            api.request("DELETE", ns_path)
            ns = api.get(ns_path)
            ns["spec"] = {"finalizers": []}
            api.request("PUT", f"{ns_path}/finalize", ns)
        except KubeApiError as err:
            if err.status != 404:
                raise
        api.wait_gone(ns_path, timeout=timeout)

    def resource_path(
        self, api_version: str, kind: str, *, namespace: str | None = None, name: str | None = None
    ) -> str:
        """REST path for a kind (via discovery): collection, or the object when ``name`` is given."""
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        for resource in self._discover(base):
            if resource["kind"] == kind and "/" not in resource["name"]:
                path = base
                if resource["namespaced"]:
                    if not namespace:
                        raise ValueError(f"{kind} is namespaced: pass namespace=")
                    path += f"/namespaces/{namespace}"
                path += f"/{resource['name']}"
                return f"{path}/{name}" if name else path
        raise LookupError(f"kind {kind} not served under {base}")

    def create_object(
        self, obj: dict[str, Any], *, namespace: str | None = None, user: str = "admin"
    ) -> dict[str, Any]:
        """Plain create (POST) of one object."""
        ns = namespace or obj.get("metadata", {}).get("namespace")
        path = self.resource_path(obj["apiVersion"], obj["kind"], namespace=ns)
        return self.request("POST", path, obj, user=user)

    def apply(
        self,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str = "ftspec-test",
        user: str = "admin",
        force: bool = True,
    ) -> dict[str, Any]:
        """Server-side apply of one object."""
        ns = namespace or obj.get("metadata", {}).get("namespace")
        path = self.resource_path(obj["apiVersion"], obj["kind"], namespace=ns, name=obj["metadata"]["name"])
        query = f"?fieldManager={field_manager}" + ("&force=true" if force else "")
        return self.request("PATCH", path + query, json.dumps(obj).encode(), user=user, content_type=APPLY_PATCH)

    def get_object(self, api_version: str, kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        return self.request("GET", self.resource_path(api_version, kind, namespace=namespace, name=name))

    def patch_status(
        self, api_version: str, kind: str, name: str, status: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Write ``.status`` as a controller would (merge patch of the status subresource)."""
        path = self.resource_path(api_version, kind, namespace=namespace, name=name) + "/status"
        return self.request("PATCH", path, {"status": status}, content_type=MERGE_PATCH)

    # ------------------------------------------------------------------ CRDs

    def install_crd(self, crd: dict[str, Any]) -> None:
        """Plain create of a CRD, then wait until Established and served."""
        self.request("POST", CRD_PATH, crd)
        self._wait_crds_established([crd])

    def install_runtimes(self, patterns: Sequence[str] = DEFAULT_RUNTIME_PATTERNS) -> list[str]:
        """Create the upstream ClusterTrainingRuntimes matching ``patterns``; return their names."""
        names: list[str] = []
        for path in runtime_paths(self.upstream_dir, list(patterns)):
            for doc in load_yaml_documents(path):
                self.create_object(doc)
                names.append(str(doc["metadata"]["name"]))
        return names

    def reinstall_trainjob_crd(self, version: str | None = None, *, recreate: bool = False) -> None:
        """Replace the TrainJob CRD by the copy for ``version`` (None/"master" = default copy).

        Default: update in place (PUT), existing TrainJobs are kept - like upgrading the operator.
        ``recreate=True``: delete the CRD (which deletes all TrainJobs) and create it again.
        """
        (crd,) = load_yaml_documents(trainjob_crd_path(self.upstream_dir, version))
        path = f"{CRD_PATH}/{TRAINJOB_CRD_NAME}"
        if recreate:
            self.request("DELETE", path)
            self.api().wait_gone(path, timeout=120)
            self.request("POST", CRD_PATH, crd)
        else:
            current = self.request("GET", path)
            crd = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            self.request("PUT", path, crd)
        self._discovery.clear()
        self._wait_crds_established([crd])
        self.installed_trainjob_crd_version = version if version not in (None, "master") else None

    def crd(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"{CRD_PATH}/{name}")

    # ------------------------------------------------------------------ internals

    def _require_started(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("KubeCluster is not started")
        return self._tmp

    def _openssl(self, *args: str) -> None:
        tmp = self._require_started()
        out = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)} failed: {out.stderr.strip()}")

    def _write_credentials(self) -> None:
        tmp = self._require_started()
        (tmp / "openssl.cnf").write_text(_OPENSSL_CNF)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        self._openssl(
            "req",
            "-x509",
            *ec,
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca_ext",
            "-subj",
            "/CN=ftspec-test-ca",
        )
        self._openssl(
            "req",
            "-new",
            *ec,
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-config",
            "openssl.cnf",
            "-subj",
            "/CN=127.0.0.1",
        )
        self._openssl(
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-set_serial",
            str(secrets.randbits(63)),
            "-days",
            "3650",
            "-out",
            "server.crt",
            "-extfile",
            "openssl.cnf",
            "-extensions",
            "server_ext",
        )
        self._openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key")
        self._tokens = {user: secrets.token_hex(16) for user in self.USERS}
        lines = [f'{self._tokens["admin"]},admin,admin,"system:masters"']
        lines += [f"{self._tokens[user]},{user},{user}" for user in self.USERS if user != "admin"]
        (tmp / "tokens.csv").write_text("\n".join(lines) + "\n")
        for name in ("ca.key", "server.key", "sa.key", "tokens.csv"):
            (tmp / name).chmod(0o600)

    def _write_kubeconfig(self) -> None:
        tmp = self._require_started()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ftspec-test",
                    "cluster": {"server": self.server, "certificate-authority": str(tmp / "ca.crt")},
                }
            ],
            "users": [{"name": user, "user": {"token": self._tokens[user]}} for user in self.USERS],
            "contexts": [
                {"name": user, "context": {"cluster": "ftspec-test", "user": user, "namespace": "default"}}
                for user in self.USERS
            ],
            "current-context": "admin",
        }
        path = tmp / "kubeconfig"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    def _popen(self, cmd: list[str], log_name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        tmp = self._require_started()
        prefix = [] if self._detach else procs.pdeathsig_prefix()
        with (tmp / log_name).open("ab") as log_file:
            return subprocess.Popen(
                [*prefix, *cmd],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=tmp,
                env=env,
            )

    def _start_etcd(self) -> None:
        tmp = self._require_started()
        etcd = controlplane_build.binary("etcd")
        client = f"http://127.0.0.1:{self._etcd_port}"
        peer = f"http://127.0.0.1:{self._peer_port}"
        self._etcd = self._popen(
            [
                str(etcd),
                "--name=default",
                f"--data-dir={tmp / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--logger=zap",
                "--log-level=warn",
            ],
            "etcd.log",
        )

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=2) as resp:
                    return bool(json.loads(resp.read()).get("health") == "true")
            except (urllib.error.URLError, OSError, ValueError):
                return False

        self._wait(healthy, self._etcd, "etcd.log", "etcd /health", timeout=30)

    def _start_apiserver(self) -> None:
        self._apiserver_cmd = apiserver_command(
            controlplane_build.binary("kube-apiserver"), self._require_started(), self._etcd_port, self._port,
            self._apiserver_flags,
        )
        self._launch_apiserver()

    def _launch_apiserver(self) -> None:
        self._apiserver = self._popen(self._apiserver_cmd, "kube-apiserver.log")
        api = KubeApi(f"https://127.0.0.1:{self._port}", self._tokens["admin"], self._require_started() / "ca.crt")

        def ready() -> bool:
            try:
                api.request("GET", "/readyz", timeout=5)
                return True
            except (KubeApiError, urllib.error.URLError, OSError, ValueError):
                return False

        self._wait(ready, self._apiserver, "kube-apiserver.log", "kube-apiserver /readyz", timeout=90)

    def _wait(
        self, check: Callable[[], bool], proc: subprocess.Popen[bytes], log_name: str, what: str, *, timeout: float
    ) -> None:
        log_path = self._require_started() / log_name
        deadline = time.monotonic() + timeout
        while not check():
            if proc.poll() is not None:
                text = procs.tail(log_path)
                if "address already in use" in text:
                    raise _PortInUse(f"{what}: address already in use")
                raise RuntimeError(f"{what}: process exited with {proc.returncode}; log {log_path}:\n{text}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not ready after {timeout:.0f} s; log {log_path}:\n{procs.tail(log_path)}")
            time.sleep(0.1)

    def _stop_processes(self) -> None:
        if self._apiserver is not None:
            procs.stop_process(self._apiserver)
            self._apiserver = None
        if self._etcd is not None:
            procs.stop_process(self._etcd)
            self._etcd = None

    @property
    def _normalized_version(self) -> str | None:
        return self._trainjob_version if self._trainjob_version not in (None, "master") else None

    def _snapshot_key(self, upstream: Path) -> str:
        files = [*crd_paths(upstream, self._trainjob_version), *runtime_paths(upstream, list(self._runtime_patterns))]
        return snapshots.snapshot_key(files, extra="|".join(self._runtime_patterns))

    def _save_snapshot(self, key: str) -> None:
        """Stop both processes cleanly, copy etcd's data dir, start both again (same ports)."""
        t0 = time.monotonic()
        self._stop_processes()
        snapshots.save(key, self._require_started() / "etcd")
        self._start_etcd()
        self._launch_apiserver()
        self._wait_crds_served()
        procs.log(f"saved etcd snapshot {key} in {time.monotonic() - t0:.1f} s")

    def _install_upstream(self, upstream: Path) -> None:
        t0 = time.monotonic()
        crds = [doc for path in crd_paths(upstream, self._trainjob_version) for doc in load_yaml_documents(path)]
        for crd in crds:
            self.request("POST", CRD_PATH, crd)
        self._wait_crds_established(crds)
        self.installed_trainjob_crd_version = self._normalized_version
        names = self.install_runtimes(self._runtime_patterns) if self._runtime_patterns else []
        procs.log(f"installed {len(crds)} CRDs and runtimes {names} in {time.monotonic() - t0:.1f} s")

    def _wait_crds_established(self, crds: Sequence[dict[str, Any]], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for crd in crds:
            name = crd["metadata"]["name"]
            while True:
                status = self.request("GET", f"{CRD_PATH}/{name}").get("status") or {}
                conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
                if conditions.get("Established") == "True":
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"CRD {name} not Established after {timeout:.0f} s: {status}")
                time.sleep(0.1)
        self._wait_crds_served(crds, deadline=deadline)

    def _wait_crds_served(self, crds: Sequence[dict[str, Any]] | None = None, deadline: float | None = None) -> None:
        """Wait until every served version of each CRD answers a list request."""
        if crds is None:
            crds = [c for c in self.request("GET", CRD_PATH)["items"] if c["spec"]["group"] != "apiextensions.k8s.io"]
        deadline = deadline or time.monotonic() + 60
        api = self.api()
        for crd in crds:
            spec = crd["spec"]
            for version in (v["name"] for v in spec["versions"] if v.get("served", True)):
                path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?limit=1"
                while True:
                    try:
                        api.get(path)
                        break
                    except KubeApiError as err:
                        if err.status != 404 or time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
        self._discovery.clear()

    def _discover(self, base: str) -> list[dict[str, Any]]:
        if base not in self._discovery:
            self._discovery[base] = list(self.request("GET", base).get("resources", []))
        return self._discovery[base]

    def _namespaced_collections(self) -> list[tuple[str, str]]:
        bases = ["/api/v1"]
        for group in self.request("GET", "/apis").get("groups", []):
            bases.append(f"/apis/{group['preferredVersion']['groupVersion']}")
        found: list[tuple[str, str]] = []
        for base in bases:
            for resource in self.request("GET", base).get("resources", []):
                if (
                    resource["namespaced"]
                    and "/" not in resource["name"]
                    and "deletecollection" in resource.get("verbs", [])
                ):
                    found.append((base, resource["name"]))
        return found


class _PortInUse(RuntimeError):
    pass


# ---------------------------------------------------------------------- command line


def _state_file() -> Path:
    return controlplane_build.cache_root() / STATE_FILE_NAME


def _cmd_start(args: argparse.Namespace) -> int:
    if _state_file().exists():
        print(
            f"a cluster started by this script may still run (state {_state_file()}); run `stop` first", file=sys.stderr
        )
        return 1
    cluster = KubeCluster(
        trainjob_crd_version=args.trainjob_crd_version, install_crds=not args.no_crds, detach=not args.foreground
    )
    cluster.start()
    print(f"KUBECONFIG={cluster.kubeconfig_path}")
    print(f"server={cluster.server}")
    for user in cluster.USERS:
        print(f"token[{user}]={cluster.token(user)}")
    if args.foreground:
        print("running in the foreground; Ctrl-C stops it", file=sys.stderr)
        try:
            while cluster.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            cluster.stop()
        return 0
    pids = {
        name: {"pid": proc.pid, "start_time": procs.start_time(proc.pid)}
        for name, proc in (("kube-apiserver", cluster._apiserver), ("etcd", cluster._etcd))
        if proc is not None
    }
    _state_file().write_text(
        json.dumps(
            {"pids": pids, "tmp_dir": str(cluster.tmp_dir), "kubeconfig": str(cluster.kubeconfig_path)}, indent=2
        )
    )
    return 0


def _cmd_stop(_args: argparse.Namespace) -> int:
    path = _state_file()
    if not path.exists():
        print("no cluster started by `kube.py start` is recorded", file=sys.stderr)
        return 0
    state = json.loads(path.read_text())
    for name, entry in state["pids"].items():  # apiserver first, then etcd
        pid, started = int(entry["pid"]), entry["start_time"]
        if procs.start_time(pid) != started:
            continue  # already gone (or the PID now belongs to another process: leave it alone)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while procs.start_time(pid) == started and time.monotonic() < deadline:
            time.sleep(0.1)
        if procs.start_time(pid) == started:
            os.kill(pid, signal.SIGKILL)
        print(f"stopped {name} (pid {pid})")
    shutil.rmtree(state["tmp_dir"], ignore_errors=True)
    path.unlink()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kube.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the pinned control plane (idempotent; cached by pins)")
    p_start = sub.add_parser("start", help="start a cluster (detached unless --foreground)")
    p_start.add_argument("--trainjob-crd-version", default=None, help=f"folder under crds/ for {TRAINJOB_CRD_FILE}")
    p_start.add_argument("--no-crds", action="store_true", help="do not install upstream CRDs/runtimes")
    p_start.add_argument("--foreground", action="store_true", help="stay in the foreground until Ctrl-C")
    sub.add_parser("stop", help="stop the cluster started by `start`")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
            return 0
        if args.command == "start":
            return _cmd_start(args)
        return _cmd_stop(args)
    except (BuildError, UpstreamMissing) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    from harness.kube import main as _main

    sys.exit(_main())
