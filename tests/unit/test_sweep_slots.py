"""A local sweep's queue (``reconciler/local/slots.py``) and the default of
``sweep.max_parallel`` (``reconciler/local/capacity.py``).

The slot logic is checked with real ``flock`` locks in this process: two open file
descriptions of one file conflict as two processes' would. The supervisors that hold them
are tested in ``security/test_sweep_queue.py`` (they are signalled, so in a private PID
namespace)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.reconciler.local.capacity import GIB, Machine, default_parallel
from ftspec.reconciler.local.slots import Queue, take, try_take
from ftspec.spec.ir import Job
from ftspec.spec.safe_files import SafeDir
from helpers.tinyspec import REPO


def _queue(folder: Path, slots: int, position: int, size: int = 3) -> Queue:
    return Queue(str(folder), slots, position, size)


def test_a_queue_reads_back_from_its_environment_value_and_refuses_malformed_ones() -> None:
    queue = Queue("/p/.ftspec/queue/tiny-sweep", 2, 1, 3)
    assert Queue.parse(queue.to_env()) == queue
    for bad in ("", "not json", "[]", '{"folder": "rel", "slots": 1, "position": 0, "size": 1}',
                '{"folder": "/q", "slots": 0, "position": 0, "size": 1}',
                '{"folder": "/q", "slots": 1, "position": 3, "size": 3}',
                '{"folder": "/q", "slots": true, "position": 0, "size": 1}',
                '{"folder": "/q", "slots": 1, "position": 0, "size": 65}'):
        assert Queue.parse(bad) is None, bad


def test_at_most_max_parallel_slots_are_taken_and_a_released_one_is_taken_again(
        tmp_path: Path) -> None:
    with SafeDir.open(tmp_path) as folder:
        first = try_take(folder, _queue(tmp_path, 2, 0))
        second = try_take(folder, _queue(tmp_path, 2, 1))
        assert first is not None and second is not None
        assert {first.index, second.index} == {0, 1}
        assert try_take(folder, _queue(tmp_path, 2, 2)) is None  # both slots held
        first.release()
        third = try_take(folder, _queue(tmp_path, 2, 2))
        assert third is not None and third.index == first.index
        second.release()
        third.release()


def test_a_point_does_not_pass_an_earlier_point_that_waits(tmp_path: Path) -> None:
    """Point 0 waits (it holds ``wait-0``): a free slot is not taken by point 2."""
    with SafeDir.open(tmp_path) as folder:
        held = try_take(folder, _queue(tmp_path, 1, 1))
        assert held is not None
        waiting = folder.open_fd("wait-0", os.O_RDWR | os.O_CREAT)
        fcntl.flock(waiting, fcntl.LOCK_EX)
        held.release()
        assert try_take(folder, _queue(tmp_path, 1, 2)) is None  # point 0 goes first
        assert try_take(folder, _queue(tmp_path, 1, 0)) is not None  # point 0 itself: yes
        os.close(waiting)


def test_take_waits_until_a_slot_frees_and_says_so_once(tmp_path: Path) -> None:
    import threading

    with SafeDir.open(tmp_path) as folder:
        held = try_take(folder, _queue(tmp_path, 1, 0))
    assert held is not None
    told: list[str] = []
    threading.Timer(0.5, held.release).start()
    slot = take(_queue(tmp_path, 1, 1), lambda: told.append("waiting"), poll_s=0.05)
    assert slot.index == 0 and told == ["waiting"]
    slot.release()


@pytest.fixture(scope="module")
def tiny_job() -> Job:
    compiled = compile_spec(SpecInput(REPO / "examples/tiny-local.yaml"), "identity")
    assert compiled.job is not None
    return compiled.job


def test_the_default_is_what_the_cores_and_the_memory_hold(tiny_job: Job) -> None:
    per_point = tiny_job.memory.total_gib * GIB  # one process
    big = default_parallel(tiny_job, 8, Machine(int(64 * per_point), cores=2, gpus=0))
    assert big.limit == 2 and big.why.startswith("2 cores, 1 process a point"), big
    tight = default_parallel(tiny_job, 8, Machine(int(3.5 * per_point), cores=16, gpus=0))
    assert tight.limit == 3 and "memory for 3" in tight.why, tight
    assert default_parallel(tiny_job, 2, Machine(int(64 * per_point), 16, 0)).limit == 2
    # a machine too small for one point still runs one at a time
    assert default_parallel(tiny_job, 8, Machine(int(0.5 * per_point), 1, 0)).limit == 1


def test_a_gpu_point_is_counted_in_gpus() -> None:
    compiled = compile_spec(SpecInput(REPO / "examples/kubeflow-llama32-1b-lora-alpaca.yaml"),
                            "identity")
    job = compiled.job
    if job is None or job.device != "cuda":
        pytest.skip("the example is not a GPU spec")
    got = default_parallel(job, 8, Machine(1 << 40, 64, gpus=8))
    assert got.limit == 8 // job.total_gpus and f"{job.total_gpus} a point" in got.why
