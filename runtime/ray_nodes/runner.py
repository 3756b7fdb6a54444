"""One node of a multi-node run: unpack the files, run the download steps and the launcher
in its own process group, report and stop it. Made a Ray actor by the driver."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from ftspec.runtime.ray_nodes.wire import fill
from ftspec.runtime.unpack import UNPACK

WATCH = """
import os, signal, sys, time
owner, group = int(sys.argv[1]), int(sys.argv[2])
def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
while alive(owner):
    try:
        os.killpg(group, 0)
    except OSError:
        sys.exit(0)
    time.sleep(0.5)
for sig, pause in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
    try:
        os.killpg(group, sig)
    except OSError:
        sys.exit(0)
    time.sleep(pause)
"""
"""Kills the launcher's process group once the actor that started it is gone."""


def stop_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the process group, SIGKILL to what is left after ``grace_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


class NodeRunner:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.proc: subprocess.Popen[bytes] | None = None
        self.stopped = False

    def where(self) -> tuple[str, int, str]:
        """This node's address, a port free on it now (rank 0's is the rendezvous) and its
        Ray node id."""
        import ray

        ip = str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
        node_id = str(ray.get_runtime_context().get_node_id())
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((ip, 0))
            return ip, int(sock.getsockname()[1]), node_id

    def _unpack(self) -> None:
        """The launcher's files into the run's folder, as a one-node job writes them."""
        if not os.environ.get("FTSPEC_FILES"):
            return
        subprocess.run([sys.executable, "-c", UNPACK], check=True,
                       env={**os.environ, "FTSPEC_RUN_DIR": self.plan["run_dir"]})

    def run(self, rank: int, addr: str, port: int) -> int:
        """Run the node's steps; the launcher's exit code (-N: killed by signal N)."""
        self._unpack()
        env = {**os.environ, **self.plan["env"]}
        for step in [*self.plan["pre"], fill(self.plan["argv"], rank, addr, port)]:
            if self.stopped:
                return -int(signal.SIGTERM)
            self.proc = subprocess.Popen(step, env=env, start_new_session=True)
            subprocess.Popen([sys.executable, "-c", WATCH, str(os.getpid()), str(self.proc.pid)],
                             start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            code = self.proc.wait()
            if code != 0:
                return code
        return 0

    def stop(self, grace_s: float = 1.0) -> None:
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            stop_group(self.proc, grace_s)
