"""Why a run failed, read from its log and the platform's words (``reconciler.failure``)."""

from __future__ import annotations

from ftspec.reconciler.failure import describe, last_exception, reason
from ftspec.reconciler.kubernetes.observe import failure, terminations

TORCHRUN = """\
step 1 | loss:5.8
[rank1]: Traceback (most recent call last):
[rank1]:   File "/x/recipes/lora.py", line 812, in train
[rank1]:     loss.backward()
[rank1]:   File "/x/torch/_tensor.py", line 648, in backward
[rank1]:     torch.autograd.backward(
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
E1125 12:00:00 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1)
Traceback (most recent call last):
  File "/x/bin/tune", line 8, in <module>
    sys.exit(main())
  File "/x/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
    return f(*args, **kwargs)
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
"""


def test_the_workers_exception_wins_over_the_launchers_wrapper() -> None:
    exc = last_exception(TORCHRUN.splitlines())
    assert exc == {"type": "torch.OutOfMemoryError",
                   "message": "CUDA out of memory. Tried to allocate 2.00 GiB",
                   "file": "/x/torch/_tensor.py", "line": 648}
    why = reason(exit_code=1, log=TORCHRUN.splitlines())
    assert why["validity"] == "invalid"
    assert why["out_of_memory"] == "cuda"
    assert describe(why) == ("out of memory: cuda; torch.OutOfMemoryError: CUDA out of memory. "
                             "Tried to allocate 2.00 GiB (at /x/torch/_tensor.py:648)")


def test_the_last_of_several_tracebacks_and_chained_ones() -> None:
    log = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "b.py", line 7, in load',
        "    open(path)",
        "FileNotFoundError: [Errno 2] No such file or directory: 'data.jsonl'",
        "[ftspec] run ended: exit code 1",
    ]
    why = reason(exit_code=1, log=log)
    assert why == {"validity": "failed", "exit_code": 1, "exception": {
        "type": "FileNotFoundError",
        "message": "[Errno 2] No such file or directory: 'data.jsonl'",
        "file": "b.py", "line": 7}}


def test_no_traceback_leaves_the_exit_code() -> None:
    why = reason(exit_code=2, log=["usage: tune run ...", "error: bad argument"])
    assert why == {"validity": "failed", "exit_code": 2}
    assert describe(why) == "exit code 2"


def test_sigkill_not_sent_by_ftspec_is_likely_the_oom_killer() -> None:
    why = reason(exit_code=-9, signal="SIGKILL")
    assert why["validity"] == "invalid"
    assert why["out_of_memory"].startswith("cpu (likely")
    stopped = reason(exit_code=-9, signal="SIGKILL", stopped_by_ftspec=True)
    assert stopped["validity"] == "failed" and "out_of_memory" not in stopped
    assert reason(log=["Traceback (most recent call last):", "MemoryError"])[
        "out_of_memory"] == "cpu"


def test_illegal_memory_access_is_invalid() -> None:
    log = ["Traceback (most recent call last):", '  File "t.py", line 3, in f',
           "RuntimeError: CUDA error: an illegal memory access was encountered"]
    assert reason(log=log)["validity"] == "invalid"


def _pod(reason_: str, code: int) -> dict[str, object]:
    return {"status": {"containerStatuses": [
        {"name": "node", "state": {"terminated": {"reason": reason_, "exitCode": code}}}]}}


def test_kubernetes_oomkilled_pod_and_the_jobs_condition() -> None:
    live = {"kind": "TrainJob", "status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "JobSetFailed",
         "message": "jobset failed: node-0 failed"}]}}
    pods = {"j-node-0-0": _pod("OOMKilled", 137), "j-node-1-0": _pod("Completed", 0)}
    assert terminations(pods) == [{"pod": "j-node-0-0", "container": "node",
                                   "reason": "OOMKilled", "exit_code": 137}]
    lines = ["[j-node-1-0] Traceback (most recent call last):",
             "[j-node-1-0] ValueError: not this one"]
    why = failure(live, pods, lines)
    assert why["validity"] == "invalid"
    assert why["platform"] == ("jobset failed: node-0 failed; pod j-node-0-0 container node: "
                               "OOMKilled (exit code 137)")
    assert why["exit_code"] == 137
    assert "exception" not in why  # the failed pod's log has none; another pod's is not it
