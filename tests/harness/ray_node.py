"""A second Ray node joined to a ``RayHead`` on the same machine: ``ray start --address=HEAD
--block`` in its own session, with its own temp dir, ports and resources. With it, a test has
a real two-node cluster on loopback (STRICT_SPREAD placement groups spread over both).

Stopped like the head: by signalling the process group this harness started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from harness import procs
from harness.ray_head import RayHead, ray_command


class RayNode:
    """A worker raylet joined to ``head``; ``resources`` are its custom Ray resources."""

    _PORT_NAMES = (
        "node-manager-port",
        "object-manager-port",
        "metrics-export-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
    )

    def __init__(self, head: RayHead, *, num_cpus: int = 2, resources: dict[str, float] | None = None,
                 object_store_bytes: int = 128 * 1024 * 1024, startup_timeout: float = 120.0) -> None:
        self.head = head
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self.object_store_bytes = object_store_bytes
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None
        self.marker = ""
        """A resource only this node has (the harness waits until the cluster lists it)."""

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int:
        """PID of this node's ``ray start`` = its process group id."""
        if self._proc is None:
            raise RuntimeError("RayNode is not started")
        return self._proc.pid

    def group_pids(self) -> list[int]:
        return procs.process_group_members(self._proc.pid) if self._proc is not None else []

    def start(self) -> RayNode:
        if self.running:
            return self
        self._tmp = procs.make_owned_tempdir("ftray-", "/tmp")
        self.marker = f"ftspec-harness-{self._tmp.name}"
        procs.register_cleanup(self, self.stop)
        ports = dict(zip(self._PORT_NAMES, procs.free_ports(len(self._PORT_NAMES)), strict=True))
        cmd = [
            ray_command(), "start", "--block", f"--address={self.head.gcs_address}",
            "--node-ip-address=127.0.0.1", f"--num-cpus={self.num_cpus}", "--num-gpus=0",
            f"--resources={json.dumps({**self.resources, self.marker: 1})}",
            f"--object-store-memory={self.object_store_bytes}", f"--temp-dir={self._tmp}",
            "--disable-usage-stats", *(f"--{name}={port}" for name, port in ports.items()),
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_JOB_CONFIG_JSON_ENV_VAR")}
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
        log_path = self._tmp / "ray-start.log"
        with log_path.open("ab") as log_file:
            self._proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        procs.record_group_leader(self._tmp, self._proc.pid)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if self.marker in alive_resources(self.head.address):
                procs.log(f"ray node joined {self.head.gcs_address} (pgid {self._proc.pid})")
                return self
            time.sleep(0.5)
        message = f"ray node did not join {self.head.gcs_address}; log {log_path}:\n{procs.tail(log_path)}"
        self.stop()
        raise RuntimeError(message)

    def stop(self) -> None:
        procs.unregister_cleanup(self)
        if self._proc is not None:
            procs.stop_process_group(self._proc, grace_s=10.0, leader_first_s=15.0)
        self._proc = None
        if self._tmp is not None and os.environ.get("FTSPEC_KEEP_TMP") != "1":
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None


def alive_resources(address: str) -> set[str]:
    """Names of the resources the ALIVE nodes offer, from the dashboard's state API (which
    lags the cluster by a few seconds)."""
    try:
        with urllib.request.urlopen(f"{address}/api/v0/nodes?limit=100&detail=true", timeout=5) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError):
        return set()
    rows = data.get("data", {}).get("result", {}).get("result", [])
    return {name for row in rows if row.get("state") == "ALIVE"
            for name in (row.get("resources_total") or {})}
