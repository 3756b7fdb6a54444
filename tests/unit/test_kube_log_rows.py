"""A Kubernetes job's step / loss (``list``) and measured properties (``output``) from its
pods' logs (``reconciler.kubernetes.measure``): pure, the API server replaced by a recorder
that serves pod lists and recorded log text (the integration harness has no kubelet, so it
cannot serve pod logs: tests/integration/test_kube_logs.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.measure import (
    LIST_LIMIT_BYTES,
    LIST_TAIL_LINES,
    PEAK_UNAVAILABLE,
    measured,
    progress,
)

KUBERAY_LOG = (Path(__file__).parent / "data" / "kuberay_two_nodes.log").read_text()
NS = "team"
CONDITION_DONE = {"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                  "lastTransitionTime": "2026-01-01T00:05:00Z"}
TORCHTUNE = (
    "INFO:torchtune.utils._logging:Model is initialized\n"
    "  0%|          | 0/2 [00:00<?, ?it/s]\r1|1|Loss: 5.7:  50%|#    | 1/2 [00:04<00:04, 4.0s/it]"
    "Step 1 | loss:5.7 lr:0.01 tokens_per_second_per_gpu:100.0\n"
    "1|2|Loss: 5.1: 100%|##########| 2/2 [00:12<00:00, 5.0s/it]"
    "Step 2 | loss:5.1 lr:0.0 tokens_per_second_per_gpu:120.0 peak_memory_alloc:2.0\n"
)


class Recorder:
    """GET pods (by label selector) and GET pods/NAME/log, as a kube-apiserver answers."""

    def __init__(self, pods: dict[str, list[str]], logs: dict[str, str | BackendError]
                 ) -> None:
        self.pods = pods  # selector -> pod names
        self.logs = logs
        self.log_queries: dict[str, list[dict[str, str]]] = defaultdict(list)

    def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        names = self.pods.get(kw["query"]["labelSelector"], [])
        return {"items": [{"metadata": {"name": n},
                           "spec": {"containers": [{"name": "node"}]}} for n in names]}

    def request_text(self, method: str, path: str, *, query: dict[str, str], what: str
                     ) -> str:
        name = path.split("/pods/")[1].removesuffix("/log")
        self.log_queries[name].append(dict(query))
        got = self.logs[name]
        if isinstance(got, BackendError):
            raise got
        return got


def trainjob(conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    status = {"conditions": conditions} if conditions is not None else \
        {"jobsStatus": [{"name": "node", "active": 1, "ready": 1}]}
    return {"kind": "TrainJob", "metadata": {"name": "tt", "namespace": NS,
                                            "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": status}


def test_a_torchtune_trainjob_shows_its_last_step_and_loss_read_with_bounds() -> None:
    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": TORCHTUNE})
    got = progress(api, trainjob())  # type: ignore[arg-type]
    assert (got.step, got.loss, got.note) == (2, 5.1, None)
    assert api.log_queries["tt-node-0-0"] == [
        {"container": "node", "tailLines": str(LIST_TAIL_LINES),
         "limitBytes": str(LIST_LIMIT_BYTES)}]


def test_a_running_trainjobs_row_has_the_time_left_status_would_say() -> None:
    """``list``'s LEFT: torchtune's bar timed step 1 at 4 s and step 2 at 12 s, so the 6
    steps to go of the 8 planned take 48 s (the job's 100 s since it was created include
    its start-up, which the run's average pace would count)."""
    from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, encode
    from ftspec.reconciler.kubernetes.observe import times

    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": TORCHTUNE.replace("/2 [", "/8 [")})
    live = trainjob()
    live["metadata"]["annotations"] = {RECORD_KEY: encode(AppliedRecord(
        "1", "w", {}, {"max steps": "8"}))}
    start, _ = times(live)
    assert start is not None
    got = progress(api, live, now=start + 100)  # type: ignore[arg-type]
    assert (got.step, got.total_steps, got.seconds_left) == (2, 8, 48.0)
    done = progress(api, trainjob([CONDITION_DONE]), now=start + 100)  # type: ignore[arg-type]
    assert done.step == 2 and done.seconds_left is None  # ended: nothing left


def test_a_kuberay_job_reads_the_submitters_log_and_the_trainer_dicts_give_no_step() -> None:
    by_pod: dict[str, list[str]] = defaultdict(list)
    for line in KUBERAY_LOG.splitlines():
        pod, text = line[1:].split("] ", 1)
        by_pod[pod].append(text)
    head, submitter = sorted(by_pod)
    live = {"kind": "RayJob", "metadata": {"name": "tiny-local", "namespace": NS},
            "status": {"jobStatus": "RUNNING", "jobDeploymentStatus": "Running",
                       "rayClusterName": head.rsplit("-head", 1)[0]}}
    api = Recorder({"batch.kubernetes.io/job-name=tiny-local": [submitter],
                    f"ray.io/cluster={head.rsplit('-head', 1)[0]},ray.io/node-type=head": [head]},
                   {p: "\n".join(t) + "\n" for p, t in by_pod.items()})
    got = progress(api, live)  # type: ignore[arg-type]
    # TRL's dicts have no step number: counting them in a log's tail would be a guess
    assert got.loss == 5.031 and got.step is None
    assert got.note is not None and "no step number" in got.note


def test_hostile_log_lines_give_numbers_or_nothing() -> None:
    hostile = ("\x1b]0;pwned\x07\x1b[2J Step 3 | loss:nan lr:0.1\n"
               "Step 4 | loss:inf\n" + "x" * 100_000 + "\n{'loss': \x1b[31m}\n")
    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": hostile})
    got = progress(api, trainjob())  # type: ignore[arg-type]
    assert got.step == 4 and got.loss is None  # a non-finite loss is dropped, not printed


def test_an_unreadable_log_says_why_and_shows_no_numbers() -> None:
    refused = BackendError('pods "tt-node-0-0" is forbidden: no host assigned')
    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": refused})
    got = progress(api, trainjob())  # type: ignore[arg-type]
    assert (got.step, got.loss) == (None, None)
    assert got.note == ('no pod log could be read: pod tt-node-0-0: pods "tt-node-0-0" is '
                        "forbidden: no host assigned")


def _job() -> Any:
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

    spec = Path(__file__).parents[2] / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    compiled = compile_spec(SpecInput(spec, (), ()), "identity",
                            CompileOptions(schema="on-error"))
    assert compiled.job is not None
    return compiled.job


def test_measured_from_a_finished_trainjob_log_says_what_is_unavailable() -> None:
    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": TORCHTUNE})
    job = _job()
    got = measured(api, job, trainjob([CONDITION_DONE]))  # type: ignore[arg-type]
    assert got["validity"] == "ok"
    assert got["train_runtime_s"] == 12  # torchtune's bar: the epoch's last elapsed time
    assert got["peak_memory"] == {"kind": "cuda max allocated", "bytes": 2 * 2**30}
    assert set(got["unavailable"]) == {"dataset_tokens", "dataset_tokens_per_second"}
    assert measured(api, job, trainjob()) == {}  # still running: nothing measured  # type: ignore[arg-type]


def test_measured_of_an_oom_killed_job_without_logs_is_invalid_and_says_why() -> None:
    refused = BackendError('pods "tt-node-0-0" is forbidden: no host assigned')
    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": refused})

    def pods(**kw: Any) -> dict[str, Any]:
        return {"items": [{"metadata": {"name": "tt-node-0-0"},
                           "spec": {"containers": [{"name": "node"}]},
                           "status": {"containerStatuses": [{"name": "node", "state": {
                               "terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}}]}

    api.request = lambda method, path, **kw: pods(**kw)  # type: ignore[method-assign]
    failed = trainjob([{"type": "Failed", "status": "True", "reason": "JobSetFailed",
                        "message": "jobset failed"}])
    got = measured(api, _job(), failed)  # type: ignore[arg-type]
    assert got["validity"] == "invalid"
    why = got["unavailable"]
    assert "no host assigned" in why["train_runtime_s"] and "no host assigned" in why["validity"]
    assert why["peak_memory"].startswith("no pod log could be read")
    assert PEAK_UNAVAILABLE not in why.values()


def test_measured_of_a_trainjob_that_trained_fewer_steps_than_applied_is_invalid() -> None:
    """The short-run rule of every backend (``failure.short_run``): the TrainJob completed,
    its log shows 2 steps, the ML summary it was applied with planned 16."""
    from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, encode

    api = Recorder({"jobset.sigs.k8s.io/jobset-name=tt": ["tt-node-0-0"]},
                   {"tt-node-0-0": TORCHTUNE})
    live = trainjob([CONDITION_DONE])
    planned = {"max steps": "16"}
    live["metadata"]["annotations"] = {RECORD_KEY: encode(AppliedRecord("1", "w", {}, planned))}
    got = measured(api, _job(), live)  # type: ignore[arg-type]
    assert got["validity"] == "invalid"
    assert got["validity_reason"] == "trained 2 of 16 planned steps"
    live["metadata"]["annotations"] = {RECORD_KEY: encode(AppliedRecord(
        "1", "w", {}, {"max steps": "2"}))}
    assert measured(api, _job(), live)["validity"] == "ok"  # type: ignore[arg-type]
