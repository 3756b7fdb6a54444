"""A real, local Ray head (``ray start --head --block`` in its own session) with the Jobs API.

Stopped by signalling the process group this harness started (never ``ray stop``, which kills
every Ray process of the user on the machine).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from harness import procs


class RayNotInstalled(RuntimeError):
    """The ``ray`` command is not available."""


def ray_command() -> str:
    """The ``ray`` CLI next to the running interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "ray"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ray")
    if found is None:
        raise RayNotInstalled("the `ray` command is not installed (pip install 'ray[default]')")
    return found


class RayHead:
    """A single-node Ray cluster on loopback; ``address`` is the Jobs API URL."""

    _PORT_NAMES = (
        "port",
        "dashboard-port",
        "ray-client-server-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
        "node-manager-port",
        "object-manager-port",
    )

    def __init__(
        self, *, num_cpus: int = 2, object_store_bytes: int = 256 * 1024 * 1024, startup_timeout: float = 120.0
    ) -> None:
        self.num_cpus = num_cpus
        self.object_store_bytes = object_store_bytes
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None
        self._ports: dict[str, int] = {}
        self.start_count = 0
        self.startup_seconds = 0.0

    # ------------------------------------------------------------------ properties

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def address(self) -> str:
        """Jobs API / dashboard URL, e.g. ``http://127.0.0.1:8265`` (for JobSubmissionClient)."""
        return f"http://127.0.0.1:{self._require('dashboard-port')}"

    @property
    def gcs_address(self) -> str:
        """``host:port`` for ``ray.init(address=...)``."""
        return f"127.0.0.1:{self._require('port')}"

    @property
    def dashboard_port(self) -> int:
        return self._require("dashboard-port")

    @property
    def temp_dir(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("RayHead is not started")
        return self._tmp

    @property
    def pid(self) -> int:
        """PID of ``ray start`` = the process group id of the whole head."""
        if self._proc is None:
            raise RuntimeError("RayHead is not started")
        return self._proc.pid

    def group_pids(self) -> list[int]:
        """Live processes in the head's process group."""
        return procs.process_group_members(self._proc.pid) if self._proc is not None else []

    def rss_bytes(self) -> int:
        """VmRSS summed over the group (counts shared libraries once per process)."""
        return procs.rss_bytes(self.group_pids())

    def pss_bytes(self) -> int:
        """PSS summed over the group: the memory the head really costs."""
        return procs.pss_bytes(self.group_pids())

    def env(self) -> dict[str, str]:
        """Environment entries pointing a subprocess at this head (``RAY_ADDRESS`` = Jobs API URL)."""
        return {"RAY_ADDRESS": self.address}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        if self.running:
            return self
        if self._proc is not None:  # died on its own: clean leftovers of that group first
            self.stop()
        started = time.monotonic()
        # Unix socket paths are limited to ~107 bytes: keep the temp dir short.
        self._tmp = procs.make_owned_tempdir("ftray-", "/tmp")
        procs.register_cleanup(self, self.stop)
        try:
            for attempt in range(3):
                self._ports = dict(zip(self._PORT_NAMES, procs.free_ports(len(self._PORT_NAMES)), strict=True))
                if self._launch():
                    break
                procs.log(f"ray head failed to start (attempt {attempt + 1}); retrying with new ports")
                self._stop_group()
            else:
                raise RuntimeError(
                    f"ray head did not start; log {self._tmp / 'ray-start.log'}:\n"
                    f"{procs.tail(self._tmp / 'ray-start.log')}"
                )
        except BaseException:
            self.stop()
            raise
        self.start_count += 1
        self.startup_seconds = time.monotonic() - started
        procs.log(f"ray head up at {self.address} (pgid {self.pid}) in {self.startup_seconds:.1f} s")
        return self

    def stop(self) -> None:
        """SIGTERM ``ray start`` (then its group and descendants), SIGKILL survivors; remove temp dir."""
        procs.unregister_cleanup(self)
        self._stop_group()
        self._proc = None
        if self._tmp is not None and os.environ.get("FTSPEC_KEEP_TMP") != "1":
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _require(self, name: str) -> int:
        if not self._ports:
            raise RuntimeError("RayHead is not started")
        return self._ports[name]

    def _launch(self) -> bool:
        assert self._tmp is not None
        cmd = [
            ray_command(),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            "--include-dashboard=true",
            f"--num-cpus={self.num_cpus}",
            "--num-gpus=0",
            f"--object-store-memory={self.object_store_bytes}",
            f"--temp-dir={self._tmp}",
            "--disable-usage-stats",
            *(f"--{name}={port}" for name, port in self._ports.items()),
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_JOB_CONFIG_JSON_ENV_VAR")}
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"  # no 30 s node drain on SIGTERM
        log_path = self._tmp / "ray-start.log"
        with log_path.open("ab") as log_file:
            # start_new_session=True == setsid: the head and all its children form our own group.
            self._proc = subprocess.Popen(
                cmd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        procs.record_group_leader(self._tmp, self._proc.pid)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if self._jobs_api_ready():
                return True
            time.sleep(0.25)
        raise TimeoutError(
            f"ray Jobs API not answering at {self.address} after {self.startup_timeout:.0f} s; "
            f"log {log_path}:\n{procs.tail(log_path)}"
        )

    def _get_json(self, path: str) -> Any:
        with urllib.request.urlopen(self.address + path, timeout=5) as resp:
            return json.loads(resp.read())

    def _jobs_api_ready(self) -> bool:
        try:
            version = self._get_json("/api/version")
            self._get_json("/api/jobs/")
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return isinstance(version, dict) and "ray_version" in version

    def _stop_group(self) -> None:
        """SIGTERM to ``ray start`` first: it stops its children itself (node draining is disabled
        via RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0). Then the whole group; SIGKILL for survivors."""
        if self._proc is not None:
            procs.stop_process_group(self._proc, grace_s=10.0, leader_first_s=15.0)
