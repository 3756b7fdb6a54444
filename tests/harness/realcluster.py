"""A current Kubernetes control plane with the real ML controllers, on loopback.

Library::

    from harness.realcluster import RealCluster
    with RealCluster() as cluster:     # builds once (cached by pins), then ~20 s to start
        cluster.kubeconfig_path, cluster.kubectl("get", "trainjobs", "-A")

What runs (every binary from ``controlplane_build``, every manifest from ``controlplane_files``):

- etcd and kube-apiserver (CRDs installed verbatim, CEL rules and all; native
  ``ValidatingAdmissionPolicy``), kube-controller-manager (Job controller, garbage collector,
  namespace, service-account and volume-binding controllers: ``KUBE_CONTROLLERS``), kube-scheduler;
- kwok, which owns the fake nodes (GPUs as the extended resource ``nvidia.com/gpu``) and plays
  pod lifecycles from ``Stage`` objects: kwok's own fast stages (ready, complete, delete), plus
  the stages a test adds (``fail_pods``: an exit code, or ``OOMKilled``);
- Kubeflow Trainer's controller manager and JobSet's, each with its validating and mutating
  webhooks served over TLS on loopback (the webhook configurations point at a URL, signed by the
  cluster's CA; certificate management is off, as in upstream's own integration tests);
- the KubeRay operator.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import yaml

from harness import controlplane_build, procs
from harness.controlplane_files import ControlPlaneFiles
from harness.kube import CRD_PATH, KubeApiError, KubeCluster

GPU_RESOURCE = "nvidia.com/gpu"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
STAGE_API = "/apis/kwok.x-k8s.io/v1alpha1/stages"
COMPLETE_STAGE = "pod-complete"
"""kwok's stage that ends a Job's running pod with exit code 0."""
TRAINER_NAMESPACE = "kubeflow-system"
VOLUME_POOL = 40
KUBE_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "pod-garbage-collector-controller",
    "ttl-after-finished-controller",
    "endpointslice-controller",
)
"""What the Trainer, JobSet and KubeRay rely on; the node lifecycle controllers stay off (kwok's
nodes send no heartbeats, and nothing here needs node IPAM or cloud routes)."""


class RealCluster(KubeCluster):
    """``KubeCluster``'s users, kubeconfig and helpers over the current control plane and controllers."""

    def __init__(
        self,
        *,
        gpu_nodes: Sequence[tuple[str, int]] = (("NVIDIA-A100-SXM4-80GB", 2), ("NVIDIA-H100-80GB-HBM3", 1)),
        gpus_per_node: int = 8,
        kuberay: bool = True,
    ) -> None:
        """``gpu_nodes``: (``nvidia.com/gpu.product`` label, node count) pairs; each node has ``gpus_per_node`` GPUs."""
        super().__init__(install_crds=False, use_snapshot=False)
        self._gpu_nodes = tuple(gpu_nodes)
        self._nodes = sum(count for _label, count in self._gpu_nodes)
        self._gpus = gpus_per_node
        self._with_kuberay = kuberay
        self._extra: dict[str, subprocess.Popen[bytes]] = {}
        self._failing: dict[str, list[dict[str, Any]]] = {}
        self.files: ControlPlaneFiles | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        if self.running and all(p.poll() is None for p in self._extra.values()):
            return self
        self.stop()
        bin_dir = controlplane_build.build()
        self.files = ControlPlaneFiles()
        started = time.monotonic()
        self._tmp = procs.make_owned_tempdir("ftreal-")
        procs.register_cleanup(self, self.stop)
        try:
            self._write_credentials()
            self._etcd_port, self._peer_port, self._port = procs.free_ports(3)
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfig()
            self._install_controller_crds()
            self._start_kube_controllers(bin_dir)
            self._start_kwok(bin_dir)
            self._start_jobset(bin_dir)
            self._start_trainer(bin_dir)
            if self._with_kuberay:
                self._start_kuberay(bin_dir)
            self._install_runtimes()
            self.add_volumes(VOLUME_POOL)
        except Exception as exc:
            logs = self._component_logs()
            self.stop()
            raise RuntimeError(f"the real control plane did not start: {exc}\n{logs}") from exc
        except BaseException:
            self.stop()
            raise
        self.start_count += 1
        self.startup_seconds = time.monotonic() - started
        procs.log(f"real control plane up at {self.server} in {self.startup_seconds:.1f} s; KUBECONFIG={self.kubeconfig_path}")
        return self

    @property
    def running(self) -> bool:
        return super().running and all(p.poll() is None for p in self._extra.values())

    def pids(self) -> list[int]:
        return [*super().pids(), *(p.pid for p in self._extra.values() if p.poll() is None)]

    def _stop_processes(self) -> None:
        for name in reversed(list(self._extra)):
            procs.stop_process(self._extra.pop(name))
        super()._stop_processes()

    def _component_logs(self, lines: int = 15) -> str:
        names = ["etcd", "kube-apiserver", *self._extra]
        return "\n".join(f"--- {name}.log\n{self.log_tail(name, lines)}" for name in names)

    def log_tail(self, component: str, lines: int = 60) -> str:
        return procs.tail(self._require_started() / f"{component}.log", lines)

    # ------------------------------------------------------------------ helpers for tests

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """The pinned kubectl against this cluster as admin."""
        cmd = [str(controlplane_build.binary("kubectl")), f"--kubeconfig={self.kubeconfig_path}", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def add_volumes(self, count: int, *, size: str = "500Gi") -> None:
        """Unclaimed PersistentVolumes (no storage class) that the PV controller binds to claims:
        the claims the spec's output names and those JobSet makes from a runtime's volumeClaimPolicies."""
        start = len(self.request("GET", "/api/v1/persistentvolumes")["items"])
        for index in range(start, start + count):
            self.request("POST", "/api/v1/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pool-{index}"},
                "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                         "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": f"/tmp/ftreal-pv-{index}"}},
            })

    def recycle_volumes(self) -> int:
        """Make the pool's Released volumes (their claims' namespaces deleted) Available again,
        as a volume plugin's recycler would; returns how many are Available now."""
        available = 0
        for pv in self.request("GET", "/api/v1/persistentvolumes")["items"]:
            phase = (pv.get("status") or {}).get("phase")
            if phase == "Released":
                self.request("PATCH", f"/api/v1/persistentvolumes/{pv['metadata']['name']}",
                             {"spec": {"claimRef": None}}, content_type="application/merge-patch+json")
                available += 1
            elif phase == "Available":
                available += 1
        return available

    def add_stage(self, stage: dict[str, Any]) -> None:
        self.request("POST", STAGE_API, stage)

    def fail_pods(self, name: str, labels: dict[str, str], *, exit_code: int = 1, reason: str = "Error") -> str:
        """A kwok stage ``name`` ending the running pods that carry ``labels`` with ``exit_code`` / ``reason``.

        kwok picks among matching stages at random by weight, so its own pod-complete stage is
        told to leave those pods alone (a ``NotIn`` per label) until ``remove_stage``: give one
        label that names exactly the failing pods (``job-name``)."""
        match = [{"key": f".metadata.labels[{json.dumps(k)}]", "operator": "In", "values": [v]} for k, v in labels.items()]
        expressions = [
            {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
            {"key": ".status.phase", "operator": "In", "values": ["Running"]},
            *match,
        ]
        self.add_stage(
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "Stage",
                "metadata": {"name": name},
                "spec": {
                    "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                    "weight": 100,
                    "selector": {"matchExpressions": expressions},
                    "next": {"statusTemplate": _failed_status_template(exit_code, reason)},
                },
            }
        )
        excluded = [{**m, "operator": "NotIn"} for m in match]
        self._edit_complete_stage(lambda exprs: [*exprs, *excluded])
        self._failing[name] = excluded
        return name

    def remove_stage(self, name: str) -> None:
        self.request("DELETE", f"{STAGE_API}/{name}")
        excluded = self._failing.pop(name, [])
        if excluded:
            self._edit_complete_stage(lambda exprs: [e for e in exprs if e not in excluded])

    def _edit_complete_stage(self, edit: Any) -> None:
        stage = self.request("GET", f"{STAGE_API}/{COMPLETE_STAGE}")
        selector = stage["spec"].setdefault("selector", {})
        selector["matchExpressions"] = edit(selector.get("matchExpressions") or [])
        self.request("PUT", f"{STAGE_API}/{COMPLETE_STAGE}", stage)

    def wait_for(self, what: str, check: Any, timeout: float = 90.0, interval: float = 0.5) -> Any:
        """Poll ``check()`` until it returns a truthy value; on timeout say what and show the controllers' logs."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not after {timeout:.0f} s\n{self._component_logs()}")
            time.sleep(interval)

    # ------------------------------------------------------------------ control plane

    def _component_kubeconfig(self) -> str:
        return str(self.kubeconfig_path)

    def _start(self, name: str, cmd: list[str], *, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = self._popen(cmd, f"{name}.log", {**os.environ, **(env or {})})
        self._extra[name] = proc
        return proc

    def _start_kube_controllers(self, bin_dir: Path) -> None:
        tmp = self._require_started()
        kubeconfig = self._component_kubeconfig()
        self._start(
            "kube-controller-manager",
            [
                str(bin_dir / "kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--controllers={','.join(KUBE_CONTROLLERS)}",
                f"--service-account-private-key-file={tmp / 'sa.key'}",
                f"--root-ca-file={tmp / 'ca.crt'}",
                "--use-service-account-credentials=false",
                "--concurrent-job-syncs=5",
            ],
        )
        self._start(
            "kube-scheduler",
            [
                str(bin_dir / "kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={procs.free_ports(1)[0]}",
            ],
        )
        # the service-account controller makes "default" in each namespace; pods need it
        self.wait_for("the default service account", lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"), 60)

    def _install_controller_crds(self) -> None:
        assert self.files is not None
        crds = self.files.crds()
        for crd in crds:
            self.request("POST", CRD_PATH, crd)
        self._wait_crds_established(crds)

    def _install_runtimes(self) -> None:
        assert self.files is not None
        path = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
        for runtime in self.files.runtimes():
            self.request("POST", path, runtime)  # through the Trainer's validating webhook

    # ------------------------------------------------------------------ kwok

    def _start_kwok(self, bin_dir: Path) -> None:
        assert self.files is not None
        for stage in self.files.kwok_stages():
            self.add_stage(stage)
        self._start(
            "kwok",
            [
                str(bin_dir / "kwok"),
                f"--kubeconfig={self._component_kubeconfig()}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--enable-crds=Stage",
                "--node-ip=127.0.0.1",
                "--cidr=10.0.0.1/16",
                f"--server-address=127.0.0.1:{procs.free_ports(1)[0]}",
            ],
        )
        index = 0
        for product, count in self._gpu_nodes:
            for _ in range(count):
                name = f"kwok-gpu-{index}"
                self.request("POST", "/api/v1/nodes", self._node(name, product))
                # the API server taints a new node not-ready; the node lifecycle controller that
                # would lift it is off (no kubelet heartbeats), so lift it here once kwok made it Ready
                index += 1
        self.wait_for("kwok nodes Ready", self._nodes_ready, 60)
        for node in self.request("GET", "/api/v1/nodes")["items"]:
            self.request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", {"spec": {"taints": None}},
                         content_type="application/merge-patch+json")

    def _node(self, name: str, product: str) -> dict[str, Any]:
        capacity = {
            "cpu": "256", "memory": "2Ti", "pods": "110", GPU_RESOURCE: str(self._gpus), "nvidia.com/roce_gdr": "8",
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": name,
                    "nvidia.com/gpu.present": "true",
                    "nvidia.com/gpu.product": product,
                },
            },
            "status": {"capacity": capacity, "allocatable": capacity},
        }

    def _nodes_ready(self) -> bool:
        nodes = self.request("GET", "/api/v1/nodes")["items"]
        ready = [
            n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions") or [])
        ]
        return len(ready) >= self._nodes

    # ------------------------------------------------------------------ webhook-serving controllers

    def _webhook_tmpdir(self, name: str) -> Path:
        """A TMPDIR whose controller-runtime default cert dir holds the cluster-signed loopback cert."""
        tmp = self._require_started()
        certs = tmp / name / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True)
        shutil.copy(tmp / "server.crt", certs / "tls.crt")
        shutil.copy(tmp / "server.key", certs / "tls.key")
        return tmp / name

    def _register_webhooks(self, docs: list[dict[str, Any]], port: int) -> None:
        ca = base64.b64encode((self._require_started() / "ca.crt").read_bytes()).decode()
        for doc in docs:
            for hook in doc.get("webhooks") or []:
                path = hook["clientConfig"]["service"].get("path", "/")
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            plural = "mutatingwebhookconfigurations" if doc["kind"].startswith("Mutating") else "validatingwebhookconfigurations"
            self.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)

    def _wait_healthy(self, name: str, port: int, timeout: float = 120.0) -> None:
        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                    return resp.status == 200
            except (urllib.error.URLError, OSError):
                return False

        self._wait(ready, self._extra[name], f"{name}.log", f"{name} /readyz", timeout=timeout)

    def _start_jobset(self, bin_dir: Path) -> None:
        assert self.files is not None
        tmp = self._require_started()
        webhook_port, probe_port = procs.free_ports(2)
        config = {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": webhook_port, "host": "127.0.0.1"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
            "metrics": {"bindAddress": "0"},
        }
        (tmp / "jobset-config.yaml").write_text(yaml.safe_dump(config))
        self._register_webhooks(self.files.jobset_webhooks(), webhook_port)
        self._start(
            "jobset",
            [
                str(bin_dir / "jobset-controller-manager"),
                f"--config={tmp / 'jobset-config.yaml'}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}",
                "--zap-log-level=info",
            ],
            env={"KUBECONFIG": self._component_kubeconfig(), "TMPDIR": str(self._webhook_tmpdir("jobset"))},
        )
        self._wait_healthy("jobset", probe_port)

    def _start_trainer(self, bin_dir: Path) -> None:
        assert self.files is not None
        tmp = self._require_started()
        self.create_namespace(TRAINER_NAMESPACE)
        webhook_port, probe_port, status_port = procs.free_ports(3)
        config = {
            "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
            "kind": "Configuration",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}", "readinessEndpointName": "readyz", "livenessEndpointName": "healthz"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"port": webhook_port, "host": "127.0.0.1"},
            "leaderElection": {"leaderElect": False},
            "certManagement": {"enable": False},
            "statusServer": {"port": status_port},
        }
        (tmp / "trainer-config.yaml").write_text(yaml.safe_dump(config))
        self._register_webhooks(self.files.trainer_webhooks(), webhook_port)
        self._start(
            "trainer",
            [str(bin_dir / "trainer-controller-manager"), f"--config={tmp / 'trainer-config.yaml'}"],
            env={
                "KUBECONFIG": self._component_kubeconfig(),
                "TMPDIR": str(self._webhook_tmpdir("trainer")),
                "POD_NAMESPACE": TRAINER_NAMESPACE,
            },
        )
        self._wait_healthy("trainer", probe_port)

    def _start_kuberay(self, bin_dir: Path) -> None:
        probe_port = procs.free_ports(1)[0]
        self._start(
            "kuberay",
            [
                str(bin_dir / "kuberay-operator"),
                "--metrics-addr=0",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}",
                "--enable-leader-election=false",
                "--log-stdout-encoder=console",
            ],
            env={"KUBECONFIG": self._component_kubeconfig()},
        )
        self._wait_healthy("kuberay", probe_port)

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
            return True
        except KubeApiError as err:
            if err.status == 404:
                return False
            raise


def _failed_status_template(exit_code: int, reason: str) -> str:
    """kwok status template: every container terminated with ``exit_code`` / ``reason``; phase Failed."""
    return (
        "{{ $now := Now }}\n"
        "containerStatuses:\n"
        "{{ range $index, $item := .spec.containers }}\n"
        "- image: {{ $item.image | Quote }}\n"
        "  name: {{ $item.name | Quote }}\n"
        "  ready: false\n"
        "  restartCount: 0\n"
        "  started: false\n"
        "  state:\n"
        "    terminated:\n"
        f"      exitCode: {exit_code}\n"
        "      finishedAt: {{ $now | Quote }}\n"
        f"      reason: {json.dumps(reason)}\n"
        "      startedAt: {{ $now | Quote }}\n"
        "{{ end }}\n"
        "phase: Failed\n"
    )
