"""``python -m ftspec.runtime.ray_nodes``: see the package docstring."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Any

from ftspec.runtime.ray_nodes.runner import NodeRunner
from ftspec.runtime.ray_nodes.wire import NODE_LOG_PREFIX, NODES_ENV, decode_plan


def say(rank: int | str, **fields: object) -> None:
    parts = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"{NODE_LOG_PREFIX} rank={rank} {parts}", flush=True)


def _stop_all(runners: list[Any]) -> None:
    import ray

    try:
        ray.get([r.stop.remote() for r in runners], timeout=30)
    except Exception as exc:  # noqa: BLE001 - a dead actor's watcher stops its launcher
        print(f"{NODE_LOG_PREFIX} stopping the nodes: {exc}", flush=True)


def main() -> int:
    import ray
    from ray.exceptions import GetTimeoutError, RayError
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    plan = decode_plan(os.environ[NODES_ENV])
    nodes, spec = int(plan["nodes"]), dict(plan["bundle"])
    ray.init(address="auto", log_to_driver=True)
    pg = placement_group([dict(spec)] * nodes, strategy=plan["strategy"])
    try:
        ray.get(pg.ready(), timeout=float(plan["ready_timeout_s"]))
    except GetTimeoutError:
        say("*", state="FAILED", reason="placement-group-timeout",
            message=f"the cluster could not place {nodes} bundles {spec} on {nodes} different "
                    f"nodes within {plan['ready_timeout_s']} s; available: "
                    f"{ray.available_resources()}")  # type: ignore[no-untyped-call]
        remove_placement_group(pg)
        return 1
    custom = {k: v for k, v in spec.items() if k not in ("CPU", "GPU")}
    actor = ray.remote(NodeRunner)
    runners: list[Any] = [actor.options(
        num_cpus=spec["CPU"], num_gpus=spec.get("GPU", 0), resources=custom,
        max_concurrency=4, scheduling_strategy=PlacementGroupSchedulingStrategy(
            pg, placement_group_bundle_index=i)).remote(plan) for i in range(nodes)]

    def on_signal(signum: int, frame: FrameType | None) -> None:
        say("*", state="STOPPING", signal=signum)
        _stop_all(runners)
        remove_placement_group(pg)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    hosts = ray.get([r.where.remote() for r in runners])
    addr, port, _ = hosts[0]
    refs = {r.run.remote(i, addr, port): i for i, r in enumerate(runners)}
    for i, (ip, _, node_id) in enumerate(hosts):
        say(i, state="RUNNING", node=ip, node_id=node_id, master=f"{addr}:{port}")
    pending, failed = list(refs), None
    while pending and failed is None:
        done, pending = ray.wait(pending, num_returns=1)
        rank = refs[done[0]]
        try:
            code = int(ray.get(done[0]))
        except RayError as exc:
            code, reason = -1, type(exc).__name__
            say(rank, state="FAILED", exit_code=code, reason=reason)
            failed = rank
            continue
        say(rank, state="SUCCEEDED" if code == 0 else "FAILED", exit_code=code)
        if code != 0:
            failed = rank
    if failed is not None:
        _stop_all(runners)
        for ref in pending:
            say(refs[ref], state="STOPPED", reason=f"node {failed} failed")
    remove_placement_group(pg)
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
