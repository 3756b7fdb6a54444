"""What `status` shows of a run's progress on every backend (``progress.status_metrics``) and
of a KubeRay job read from its pods' log (``kubernetes.observe``).

The KubeRay log (``data/kuberay_two_nodes.log``) is written in the format the real pieces
print (``ray job submit``'s tail in the submitter pod, the multi-node driver's
``[ftspec-node]`` lines, TRL's log records forwarded from the ``NodeRunner`` actors, Ray's own
head pod log) and ordered as ``job_logs`` yields it (by pod name): the test API server has no
kubelet, so no pod log can be produced for real there.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from ftspec.cli.render_status import render_status, status_json
from ftspec.reconciler.kubernetes.observe import job_status, metric_lines, times
from ftspec.reconciler.model import Phase
from ftspec.reconciler.progress import Tracker, progress_line, status_metrics, track_text
from helpers.jobs import make_job

# torchtune 0.6.1's StdoutLogger, 5 of 100 steps done (the log `status` reads at once)
TORCHTUNE_LOG = "".join(
    f"1|{i}|Loss: {6 - i * 0.1:.4f}:   {i}%|▏  | {i}/100 [00:{i * 10:02d}<16:00, 10.0s/it]\r"
    f"Step {i} | loss:{6 - i * 0.1:.4f} lr:0.0001 tokens_per_second_per_gpu:410.5 \n"
    for i in range(1, 6))
KUBERAY_LOG = (Path(__file__).parent / "data" / "kuberay_two_nodes.log").read_text()
RAYJOB = {
    "apiVersion": "ray.io/v1", "kind": "RayJob",
    "metadata": {"name": "tiny-local", "namespace": "ml",
                 "creationTimestamp": "2026-11-23T22:40:40Z"},
    "status": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING",
               "rayClusterName": "tiny-local-raycluster-x2k9w", "jobId": "tiny-local-x2k9w",
               "startTime": "2026-11-23T22:41:00Z"},
}


def test_time_left_while_running_is_the_average_pace_so_far() -> None:
    """A whole log read at once gives every step the same clock: the time left comes from
    the elapsed time, not from the tracker's (zero) pace between those steps."""
    tracker = track_text(TORCHTUNE_LOG, total_steps=100, steps_per_epoch=100)
    assert [p.step for p in tracker.points] == [1, 2, 3, 4, 5]
    running = status_metrics(tracker, elapsed_s=50.0, ended=False)
    assert running["step"] == 5 and running["elapsed_s"] == 50.0
    assert running["seconds_left"] == 950.0  # 10 s a step, 95 steps to go
    assert "final_loss" not in running
    head = render_status({"address": "ray.job.tiny", "phase": "Running", "message": "",
                          "metrics": running})[0]
    assert "step 5/100 (5%) · epoch 1 · 50s elapsed · 15m 50s left" in head, head


def test_no_time_left_once_ended_and_the_last_loss_is_final() -> None:
    tracker = track_text(TORCHTUNE_LOG, total_steps=100, steps_per_epoch=100)
    for_failed = status_metrics(tracker, elapsed_s=50.0, ended=True)
    assert "seconds_left" not in for_failed and for_failed["final_loss"] == 5.5
    # no start time: the bars' own clock still times the steps; without bars nothing does
    unknown = status_metrics(tracker, elapsed_s=None, ended=False)
    assert unknown["seconds_left"] == 950.0 and "elapsed_s" not in unknown
    no_bars = track_text("".join(line.split("\r")[-1] for line in
                                 TORCHTUNE_LOG.splitlines(keepends=True)), total_steps=100)
    assert [p.step for p in no_bars.points] == [1, 2, 3, 4, 5]
    unknown = status_metrics(no_bars, elapsed_s=None, ended=False)
    assert "seconds_left" not in unknown and "elapsed_s" not in unknown


def test_live_pace_when_a_poll_brings_several_steps_at_once() -> None:
    """`apply --wait` polls: steps read in one poll share a clock; the pace spans polls."""
    clock = itertools.chain([0.0] * 3, [6.0] * 3)
    t = Tracker(total_steps=10, clock=lambda: next(clock))
    t.feed([f"Step {i} | loss:{5 - i * 0.1:.2f} lr:0.01 " for i in range(1, 4)])
    assert t.seconds_per_step() is None and t.event()["seconds_left"] is None  # no time yet
    t.feed([f"Step {i} | loss:{5 - i * 0.1:.2f} lr:0.01 " for i in range(4, 7)])
    assert t.seconds_per_step() == 1.2  # 6 s between steps 1 and 6
    assert progress_line(t.event()).endswith("5s left")  # 4 steps x 1.2 s


def test_kuberay_status_shows_each_node_progress_and_elapsed_from_the_pod_log() -> None:
    job = make_job(resources={"nodes": 2, "gpus_per_node": 0}, launcher="accelerate",
                   deploy={"target": "kuberay"},
                   training={"max_steps": 12, "epochs": None, "logging": {"steps": 1}})
    lines = KUBERAY_LOG.splitlines()
    # the head pod sorts first, but the metrics are in the submitter's (driver's) log
    assert metric_lines(lines)[0].startswith("2026-11-23 22:41:07,112\tINFO cli.py")
    now = 1795473720.0  # 2026-11-23T22:42:00Z: 60 s after the job started
    status = job_status(job, "kuberay.rayjob.ml/tiny-local", RAYJOB, lines, now=now)
    assert status.phase is Phase.RUNNING
    assert status.platform["nodes"] == [
        {"rank": "0", "state": "STOPPED", "node": "10.244.0.13", "node_id": "3f0a1c",
         "master": "10.244.0.13:41523", "reason": "node"},
        {"rank": "1", "state": "FAILED", "node": "10.244.0.14", "node_id": "9b72de",
         "exit_code": "-9"}]
    m = status.metrics
    assert (m["step"], m["total_steps"], m["loss"], m["elapsed_s"]) == (3, 12, 5.031, 60.0)
    assert m["seconds_left"] == 180.0 and m["tokens"] == 1536
    shown = render_status(status_json(status))
    assert "step 3/12 (25%) · epoch 0.75 · 1m 00s elapsed · 3m 00s left" in shown[0], shown
    assert "  nodes: 0 STOPPED on 10.244.0.13, 1 FAILED on 10.244.0.14 (exit -9)" in shown


def test_kubernetes_elapsed_ends_with_the_job() -> None:
    done = {**RAYJOB, "status": {**RAYJOB["status"], "jobDeploymentStatus": "Complete",
                                 "jobStatus": "SUCCEEDED", "endTime": "2026-11-23T22:43:30Z"}}
    start, end = times(done)
    assert start is not None and end is not None and end - start == 150.0
    job = make_job(deploy={"target": "kuberay"},
                   training={"max_steps": 12, "epochs": None, "logging": {"steps": 1}})
    status = job_status(job, "a", done, KUBERAY_LOG.splitlines(), now=start + 9999)
    assert status.phase is Phase.SUCCEEDED and status.metrics["elapsed_s"] == 150.0
    assert "seconds_left" not in status.metrics and status.metrics["final_loss"] == 5.031
    trainjob = {"kind": "TrainJob", "metadata": {"creationTimestamp": "2026-11-23T22:00:00Z"},
                "status": {"conditions": [{"type": "Complete", "status": "True",
                                           "lastTransitionTime": "2026-11-23T22:05:00Z"}]}}
    start, end = times(trainjob)
    assert start is not None and end is not None and end - start == 300.0


# TRL 1.16's log records of a 4-step run and its end-of-training summary
TRL_LOG = "".join(
    f"{{'loss': {6 - i * 0.5}, 'grad_norm': 1.5, 'learning_rate': 0.0002, "
    f"'num_tokens': {8192.0 * i}, 'mean_token_accuracy': 0.1, 'epoch': {i / 4}}}\n"
    for i in range(1, 5)) + (
    "{'train_runtime': 2.048, 'train_samples_per_second': 7.8, 'train_steps_per_second': 1.9, "
    "'train_loss': 4.75, 'epoch': 1.0}\n")


def test_a_log_read_at_once_gives_the_run_rate_not_the_reading_speed() -> None:
    """Steps read microseconds apart are no pace: the rate is the run's tokens over its
    runtime (once ended, the trainer's own train_runtime), else over the time elapsed."""
    tracker = track_text(TRL_LOG, total_steps=4, tokens_per_step=8192)
    assert [p.step for p in tracker.points] == [1, 2, 3, 4]
    ended = status_metrics(tracker, elapsed_s=30.0, ended=True)
    assert ended["tokens_per_s"] == 16000.0  # 32768 tokens in 2.048 s of training
    running = status_metrics(track_text(TRL_LOG.rsplit("{'train_runtime'", 1)[0],
                                        total_steps=4, tokens_per_step=8192),
                             elapsed_s=8.0, ended=False)
    assert running["tokens_per_s"] == 4096.0  # 32768 tokens in 8 s elapsed
    unknown = status_metrics(track_text(TRL_LOG.rsplit("{'train_runtime'", 1)[0],
                                        total_steps=4), elapsed_s=None, ended=False)
    assert "tokens_per_s" not in unknown
    logged = status_metrics(track_text(TORCHTUNE_LOG, total_steps=100), elapsed_s=50.0,
                            ended=False)
    assert logged["tokens_per_s"] == 410.5  # torchtune's own figure
