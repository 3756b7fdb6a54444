"""Objects of odd shapes from an API server (issue 34): a pod with ``metadata: null`` was an
internal error in 5 of 7 commands. A loopback server answers as a cluster whose job failed,
with pods of every odd shape (null or non-mapping metadata, spec and status; a name that
is not a string; null entries in container lists; a list that is not a list); each command
that reads pods must end in its ordinary output or a clear error, never an internal error
or a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from ftspec.cli.main import main
from helpers.hostile_http import Answer, Seen, body, serve

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
NAME = "llama32-1b-alpaca-lora"
LABELS = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": NAME}

ODD_PODS: list[Any] = [
    {"metadata": None},
    {"metadata": "pod"},
    {"metadata": {"name": 7}},
    {"metadata": {"name": "p-spec"}, "spec": None, "status": None},
    {"metadata": {"name": "p-lists"}, "spec": {"containers": [None, "x", {"name": None}]},
     "status": {"containerStatuses": [None, {"name": "node", "state": None,
                                             "lastState": "x"}],
                "conditions": "ready", "phase": None}},
    {"metadata": {"name": "p-terminated"}, "spec": {"containers": {"name": "node"}},
     "status": {"containerStatuses": [{"name": "node", "state": {"terminated": None}}]}},
    None, "pod", 5, [],
]


def _job() -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": NAME, "namespace": "ml", "labels": LABELS,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}},
            "status": {"conditions": [{"type": "Failed", "status": "True",
                                       "reason": "Broken", "message": "pods failed"}]}}


def _answer(seen: Seen) -> Answer:
    path = seen.path.split("?")[0]
    if re.fullmatch(r"/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/ml/trainjobs/" + NAME,
                    path):
        return body(json.dumps(_job()).encode())
    if path.endswith("/trainjobs"):
        return body(json.dumps({"kind": "TrainJobList", "items": [_job()]}).encode())
    if path.endswith("/log"):
        return Answer(chunks=[b"Step 1 | loss:5.7\n"], length=18, content_type="text/plain")
    if path.endswith("/pods"):
        return body(json.dumps({"kind": "PodList", "items": ODD_PODS}).encode())
    if path.endswith(("/events", "/jobs", "/jobsets")):
        return body(json.dumps({"items": [None, {"metadata": None, "type": "Warning"}]})
                    .encode())
    missing = {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}
    return Answer(status=404, chunks=[json.dumps(missing).encode()],
                  length=len(json.dumps(missing)))


@pytest.mark.slow
@pytest.mark.parametrize("command", [["status"], ["logs"], ["output"], ["list"],
                                     ["status", "--verbose"]])
def test_odd_pods_never_make_an_internal_error(command: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    with serve(_answer) as server:
        config = tmp_path / "kubeconfig"
        config.write_text(
            f"clusters: [{{name: k, cluster: {{server: '{server.url}'}}}}]\n"
            "contexts: [{name: c, context: {cluster: k, user: u, namespace: ml}}]\n"
            "users: [{name: u, user: {token: t0ken123}}]\ncurrent-context: c\n")
        code = main([*command, str(EXAMPLE), "--kubeconfig", str(config)])
        asked = [s.path for s in server.seen]
    out = capsys.readouterr()
    text = out.out + out.err
    assert "internal error" not in text and "Traceback" not in text, text
    assert code in (0, 1), text
    assert any("/pods" in p for p in asked), asked  # the odd pods were read


def test_shapes_keep_what_a_real_server_sends() -> None:
    from ftspec.reconciler.kubernetes.shapes import shaped

    done = {"kind": "Status", "status": "Success", "details": {"name": "x"}}
    assert shaped(done) == done  # a Status's status is a word, kept
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "node"}]},
           "status": {"phase": "Failed", "containerStatuses": [
               {"name": "node", "state": {"terminated": {"exitCode": 137}}}]}}
    assert shaped({"kind": "PodList", "items": [pod]}) == {"kind": "PodList", "items": [pod]}
    assert shaped(pod) == pod
    odd = shaped({"kind": "PodList", "items": ODD_PODS})["items"]
    assert [p["metadata"]["name"] for p in odd] == ["p-spec", "p-lists", "p-terminated"]
    assert odd[0]["spec"] == {} and odd[0]["status"] == {}
    assert odd[1]["status"]["containerStatuses"] == [{"name": "node", "state": {},
                                                      "lastState": {}}]
    assert odd[1]["status"]["conditions"] == [] and odd[2]["spec"]["containers"] == []


RAY_EXAMPLE = REPO / "examples" / "hf-peft-smollm-135m-samsum.yaml"
RAY_LABELS = {"app.kubernetes.io/managed-by": "ftspec",
              "ftspec.dev/spec-id": "smollm-135m-samsum-lora"}
ODD_JOBS: list[Any] = [
    None, 5, "job", {"metadata": None}, {"metadata": "x"}, {"metadata": [1]},
    {"metadata": dict(RAY_LABELS), "submission_id": None, "status": 5},
    {"metadata": {**RAY_LABELS, "ftspec.dev/spec-file": 7}, "submission_id": "s1",
     "status": "FAILED", "start_time": "x", "end_time": None, "driver_exit_code": "x",
     "entrypoint": None, "runtime_env": "x"},
]


def _ray_answer(seen: Seen) -> Answer:
    path = seen.path.split("?")[0]
    if path == "/api/jobs/":
        return body(json.dumps(ODD_JOBS).encode())
    if path.endswith("/logs"):
        return body(b'{"logs": null}')
    if path.startswith("/api/jobs/"):
        return body(json.dumps(ODD_JOBS[-1]).encode())
    if path.startswith("/api/v0/nodes"):
        return body(b'{"data": {"result": {"result": [null, {"resources_total": null}]}}}')
    return Answer(status=404, chunks=[b"{}"], length=2)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["plan", "status", "logs", "output", "list"])
def test_odd_ray_jobs_never_make_an_internal_error(command: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with serve(_ray_answer) as server:
        args = ["list", "--ray-address", server.url] if command == "list" else \
            [command, str(RAY_EXAMPLE), "--set", f"deploy.ray.address={server.url}"]
        code = main(args)
        asked = [s.path for s in server.seen]
    out = capsys.readouterr()
    text = out.out + out.err
    assert "internal error" not in text and "Traceback" not in text, text
    assert code in (0, 1, 2), text
    assert "/api/jobs/" in asked, asked
