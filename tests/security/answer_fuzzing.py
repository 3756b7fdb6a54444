"""Mutation fuzzing of cluster answers: a realistic pod list (Kubernetes) or job list (Ray
Jobs API), changed at random places into hostile values, served from loopback to ftspec's
commands in process. Shared by ``test_answer_fuzz.py`` (a few seeds in the suite) and a longer
run (``python tests/security/answer_fuzzing.py CASES``, which prints the outcome counts).

Outcome classes: ``ok`` (exit 0), ``refused`` (exit 1 or 2: a clear error), ``crash`` (an
internal error or a traceback reached the user), ``hang`` (past the time limit).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
KUBE_EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
RAY_EXAMPLE = REPO / "examples" / "hf-peft-smollm-135m-samsum.yaml"
KUBE_NAME = "llama32-1b-alpaca-lora"
RAY_ID = "smollm-135m-samsum-lora"
OWNER = {"app.kubernetes.io/managed-by": "ftspec"}

HOSTILE: list[Any] = [None, "", "x" * 5000, 0, -1, 1.5, True, [], {}, [None], {"a": None},
                      "\x1b]52;c;AAAA\x07", [[[[[]]]]], {"metadata": None}]


def kube_pods() -> dict[str, Any]:
    pod = {"metadata": {"name": f"{KUBE_NAME}-node-0-0", "namespace": "ml",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": KUBE_NAME}},
           "spec": {"containers": [{"name": "node", "image": "x"}]},
           "status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}],
                      "containerStatuses": [{"name": "node", "restartCount": 1, "state": {
                          "terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                          "lastState": {}}]}}
    return {"kind": "PodList", "items": [pod, copy.deepcopy(pod)]}


def kube_job() -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": KUBE_NAME, "namespace": "ml",
                         "labels": {**OWNER, "ftspec.dev/spec-id": KUBE_NAME},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "Broken",
                                       "message": "pods failed"}],
                       "jobsStatus": [{"name": "node", "failed": 1}]}}


def ray_jobs() -> list[Any]:
    return [{"type": "SUBMISSION", "submission_id": "raysubmit_1", "status": "FAILED",
             "entrypoint": "python -m x", "message": "failed", "start_time": 1700000000000,
             "end_time": 1700000100000, "driver_exit_code": 1, "runtime_env": {},
             "metadata": {**OWNER, "ftspec.dev/spec-id": RAY_ID,
                          "ftspec.dev/spec-file": "examples/x.yaml"}}]


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _places(item, path + (i,))


def mutate(value: Any, rng: random.Random, count: int) -> Any:
    """``value`` with ``count`` random places replaced by hostile values or removed."""
    out = copy.deepcopy(value)
    for _ in range(count):
        places = [p for p in _places(out) if p]
        if not places:
            return rng.choice(HOSTILE)
        *parent_path, last = rng.choice(places)
        parent = out
        for part in parent_path:
            parent = parent[part]
        if isinstance(parent, dict) and rng.random() < 0.25:
            del parent[last]
        else:
            parent[last] = copy.deepcopy(rng.choice(HOSTILE))
    return out


def kube_server_answer(pods: Any, job: Any) -> Callable[[Any], Any]:
    from helpers.hostile_http import Answer, body

    def answer(seen: Any) -> Any:
        path = seen.path.split("?")[0]
        if path.endswith(f"/trainjobs/{KUBE_NAME}"):
            return body(json.dumps(job).encode())
        if path.endswith("/trainjobs"):
            return body(json.dumps({"kind": "TrainJobList", "items": [job]}).encode())
        if path.endswith("/log"):
            return Answer(chunks=[b"Step 1 | loss:5.7\n"], length=18, content_type="text/plain")
        if path.endswith("/pods"):
            return body(json.dumps(pods).encode())
        if path.endswith(("/events", "/jobs", "/jobsets")):
            return body(b'{"items": []}')
        missing = b'{"kind": "Status", "code": 404, "reason": "NotFound", "message": "no"}'
        return Answer(status=404, chunks=[missing], length=len(missing))
    return answer


def ray_server_answer(jobs: Any) -> Callable[[Any], Any]:
    from helpers.hostile_http import Answer, body

    def answer(seen: Any) -> Any:
        path = seen.path.split("?")[0]
        if path == "/api/jobs/":
            return body(json.dumps(jobs).encode())
        if path.endswith("/logs"):
            return body(b'{"logs": "Step 1 | loss:5.7\\n"}')
        if path.startswith("/api/jobs/"):
            one = jobs[0] if isinstance(jobs, list) and jobs else jobs
            return body(json.dumps(one).encode())
        return Answer(status=404, chunks=[b"{}"], length=2)
    return answer


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def _raise(_signum: int, _frame: Any) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_case(backend: str, command: str, seed: int, kubeconfig: Path, time_limit: int = 60
             ) -> tuple[str, str]:
    """One mutant through one command: (outcome, what was printed)."""
    from ftspec.cli.main import main
    from helpers.hostile_http import serve

    rng = random.Random(seed)
    count = rng.randint(1, 4)
    if backend == "kube":
        pods, job = kube_pods(), kube_job()
        if rng.random() < 0.7:
            pods = mutate(pods, rng, count)
        else:
            job = mutate(job, rng, count)
        answer = kube_server_answer(pods, job)
    else:
        answer = ray_server_answer(mutate(ray_jobs(), rng, count))
    out, err = io.StringIO(), io.StringIO()
    with serve(answer) as server:
        if backend == "kube":
            kubeconfig.write_text(
                f"clusters: [{{name: k, cluster: {{server: '{server.url}'}}}}]\n"
                "contexts: [{name: c, context: {cluster: k, user: u, namespace: ml}}]\n"
                "users: [{name: u, user: {token: t0ken123}}]\ncurrent-context: c\n")
            args = [command, str(KUBE_EXAMPLE), "--kubeconfig", str(kubeconfig)]
        elif command == "list":
            args = ["list", "--ray-address", server.url]
        else:
            args = [command, str(RAY_EXAMPLE), "--set", f"deploy.ray.address={server.url}"]
        try:
            with _time_limit(time_limit), contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                code = main(args)
        except TimeoutError:
            return "hang", out.getvalue() + err.getvalue()
    text = out.getvalue() + err.getvalue()
    if "internal error" in text or "Traceback" in text:
        return "crash", text
    return ("ok" if code == 0 else "refused" if code in (1, 2) else "crash"), text


COMMANDS = {"kube": ("status", "logs", "output", "list"),
            "ray": ("plan", "status", "logs", "output", "list")}


def campaign(cases: int, kubeconfig: Path, first_seed: int = 0) -> Counter[str]:
    counts: Counter[str] = Counter()
    for n in range(cases):
        backend = ("kube", "ray")[n % 2]
        command = COMMANDS[backend][(n // 2) % len(COMMANDS[backend])]
        outcome, text = run_case(backend, command, first_seed + n, kubeconfig)
        counts[outcome] += 1
        if outcome in ("crash", "hang"):
            sys.stderr.write(f"{outcome}: {backend} {command} seed {first_seed + n}\n"
                             f"{text[-2000:]}\n")
    return counts


if __name__ == "__main__":
    import os
    import tempfile

    sys.path.insert(0, str(REPO / "tests"))
    os.environ["NO_COLOR"] = "1"
    with tempfile.TemporaryDirectory() as folder:
        print(dict(campaign(int(sys.argv[1]) if len(sys.argv) > 1 else 200,
                            Path(folder) / "kubeconfig")))
