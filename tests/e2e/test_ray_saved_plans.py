"""A saved plan cannot choose the Ray cluster or the command (issue 34, item 1), against a
REAL Ray head (harness ``ray_head``).

On main before the fix, a plan file's ``after`` chose both the Jobs API (dashboard) URL the
job went to and its entrypoint. Here the saved plan's address points at a listener of the
test's own and its entrypoint writes a file; with the checksum recomputed, ``apply --plan``
refuses it, the listener sees no connection and the head gets no job. The unedited plan
applies.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.ray, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def _ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _ray_sets(workdir: Path, address: str) -> tuple[str, ...]:
    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    values = {"deploy.target": "ray", "deploy.ray.address": address,
              "model.uri": f"file://{tiny}/model",
              "model.tokenizer.uri": f"file://{tiny}/model/tokenizer.model",
              "data.train.uri": f"file://{tiny}/dataset.jsonl",
              "output.uri": f"file://{workdir / 'ray-output'}"}
    return tuple(x for k, v in values.items() for x in ("--set", f"{k}={v}"))


def _owned_jobs(address: str) -> list[str]:
    with urllib.request.urlopen(f"{address}/api/jobs/", timeout=10) as resp:
        return [j["submission_id"] for j in json.loads(resp.read())
                if (j.get("metadata") or {}).get("app.kubernetes.io/managed-by") == "ftspec"]


def _forged(path: Path, doc: dict[str, Any]) -> Path:
    body = {k: v for k, v in doc.items() if k != "checksum"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["checksum"] = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    path.write_text(json.dumps(body))
    return path


def test_a_saved_plan_cannot_choose_the_cluster_or_the_entrypoint(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any) -> None:
    sets = _ray_sets(workdir, ray_head.address)
    made = _ftspec(workdir, e2e_env, "plan", str(SPEC), *sets, "--out", "ray.plan")
    assert made.returncode == 0, made.stdout + made.stderr
    doc = json.loads((workdir / "ray.plan").read_text())
    (change,) = doc["changes"]
    assert change["action"] == "create" and change["after"]["address"] == ray_head.address

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        for what, edit in (
                ("address", {"address": f"http://127.0.0.1:{port}",
                             "entrypoint": f"id > {workdir / 'pwned'}"}),
                ("entrypoint", {"entrypoint": f"id > {workdir / 'pwned'}"})):
            edited = json.loads(json.dumps(doc))
            edited["changes"][0]["after"].update(edit)
            forged = _forged(workdir / f"{what}.plan", edited)
            done = _ftspec(workdir, e2e_env, "apply", "--plan", str(forged))
            assert done.returncode == 1
            assert ("Saved plan does not match what its specs compile to now: changes[0] "
                    f"ray.job.tiny-local (create): after.{what} differs") in done.stderr, \
                done.stderr
            with pytest.raises(TimeoutError):
                listener.accept()  # the address in the file was never contacted
        assert _owned_jobs(ray_head.address) == []
        assert not (workdir / "pwned").exists()
    finally:
        listener.close()

    applied = _ftspec(workdir, e2e_env, "apply", "--plan", "ray.plan")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert len(_owned_jobs(ray_head.address)) == 1
    gone = _ftspec(workdir, e2e_env, "destroy", str(SPEC), *sets, "--auto-approve")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert _owned_jobs(ray_head.address) == []
