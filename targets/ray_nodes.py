"""Multi-node runs on Ray (``deploy.target: ray`` / ``kuberay`` with ``resources.nodes > 1``).

The Ray job's entrypoint is the driver ``python -m ftspec.runtime.ray_nodes``. It
reads the ``NodePlan`` below (base64 JSON in the runtime_env variable ``FTSPEC_NODES``),
reserves one placement-group bundle per node (STRICT_SPREAD: every bundle on its own Ray
node), and starts the launcher's command once per bundle, with that node's rank and the
rank-0 node's address and a free port there filled into the rank flags this module sets:

- accelerate: ``--num_machines N --machine_rank R --main_process_ip A --main_process_port P``
- torchtune (torchrun's flags via ``tune run``): ``--nnodes N --nproc-per-node G
  --node-rank R --rdzv-backend static --rdzv-endpoint A:P``

The placeholders ``${NODE_RANK}``, ``${MASTER_ADDR}`` and ``${MASTER_PORT}`` are replaced by
the driver itself (it starts the argv directly, no shell). Whatever ``launch(job)`` of the
launcher target returns is what runs; only the rank flags are set here.

Each bundle asks for the node's GPUs and CPUs plus the Ray resources of ``deploy.ray_nodes``:
the accelerator (Ray's ``accelerator_type:<type>``, or with ``gpu_resource`` the seed's
GPU-model resource with the GPU count), a whole-node resource, extra resources, and the RoCE
resource when RoCE is on (with NCCL's RoCE settings in every node's environment).
"""

from __future__ import annotations

from typing import Any

from ftspec.runtime.ray_nodes.wire import ADDR, PORT, RANK
from ftspec.spec.catalog.accelerators import accelerator_of
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.targets.embed import set_flags

DRIVER_MODULE = "ftspec.runtime.ray_nodes"
ACCELERATOR_SHARE = 0.001
"""How Ray itself asks for an accelerator type: a tiny share of ``accelerator_type:X``."""


def rank_flags(job: Job) -> dict[str, str]:
    """The launcher's multi-node flags, with the driver's placeholders."""
    from ftspec.targets import get_launcher

    return get_launcher(job.launcher).rank_flags(job, RANK, ADDR, PORT)


def _cpus(job: Job) -> float:
    ray_nodes = job.spec.deploy.ray_nodes
    if ray_nodes.cpus is not None:
        return ray_nodes.cpus
    cpu = job.spec.resources.cpu
    if cpu:
        return float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
    return 1.0


def accelerator_resources(job: Job) -> dict[str, float]:
    """The accelerator's Ray resource for one node (empty on CPU or without an accelerator)."""
    acc = accelerator_of(job.spec.resources.accelerator)
    if acc is None or job.gpus_per_node == 0:
        return {}
    chosen = job.spec.deploy.ray_nodes.gpu_resource
    if chosen is None:
        return {acc.ray_type_resource: ACCELERATOR_SHARE}
    return {acc.gpu_resource if chosen == "auto" else chosen: float(job.gpus_per_node)}


def custom_resources(job: Job) -> dict[str, float]:
    """Custom Ray resources one node's bundle asks for (and a KubeRay worker advertises)."""
    ray_nodes = job.spec.deploy.ray_nodes
    out = accelerator_resources(job)
    if ray_nodes.whole_node_resource:
        out[ray_nodes.whole_node_resource] = 1.0
    if ray_nodes.roce.enabled:
        out[ray_nodes.roce.resource] = 1.0
    out.update(ray_nodes.extra_resources)
    return dict(sorted(out.items()))


def bundle(job: Job) -> dict[str, float]:
    """One node's placement-group bundle."""
    out: dict[str, float] = {"CPU": _cpus(job)}
    if job.gpus_per_node:
        out["GPU"] = float(job.gpus_per_node)
    return {**out, **custom_resources(job)}


def roce_env(job: Job) -> dict[str, str]:
    """NCCL's RoCE settings (the seed's RayCluster workers), for multi-node runs with RoCE on."""
    roce = job.spec.deploy.ray_nodes.roce
    if not roce.enabled or job.nodes == 1:
        return {}
    env = {"NCCL_IB_DISABLE": "0"}
    if roce.hca:
        env["NCCL_IB_HCA"] = roce.hca
    if roce.gid_index is not None:
        env["NCCL_IB_GID_INDEX"] = str(roce.gid_index)
    return env


def node_plan(job: Job, argv: list[str], pre: list[list[str]], run_dir: str
              ) -> dict[str, Any]:
    """What the driver runs: ``argv`` is the launcher's (files already under ``run_dir``)."""
    return {
        "nodes": job.nodes,
        "strategy": "STRICT_SPREAD",
        "bundle": bundle(job),
        "argv": set_flags(argv, rank_flags(job)),
        "pre": pre,
        "env": roce_env(job),
        "run_dir": run_dir,
        "ready_timeout_s": job.spec.deploy.ray_nodes.ready_timeout_s,
    }


def _warn(path: tuple[str, ...], summary: str, code: str) -> Diagnostic:
    return Diagnostic(Severity.WARNING, summary, path=("deploy", "ray_nodes", *path), code=code)


def _inert_settings(job: Job, target: str) -> list[Diagnostic]:
    """``deploy.ray_nodes`` settings that change nothing for this job."""
    ray_nodes = job.spec.deploy.ray_nodes
    roce = ray_nodes.roce
    default = type(roce)()
    changed = [name for name in ("resource", "hca", "gid_index", "devices_per_node")
               if getattr(roce, name) != getattr(default, name)]
    found = []
    if not roce.enabled:
        found += [_warn(("roce", name), f"roce.{name} has no effect while roce.enabled is "
                        "false", f"{target}.roce-off") for name in changed]
    elif target == "ray" and "devices_per_node" in changed:
        found.append(_warn(("roce", "devices_per_node"), "devices_per_node is what KubeRay "
                           "worker pods request; the nodes of an existing Ray cluster already "
                           "have their RDMA devices", "ray.roce-devices"))
    if job.nodes > 1:
        return found
    if roce.enabled:
        found.append(_warn(("roce", "enabled"), "RoCE only takes effect in multi-node runs; "
                           "with nodes: 1 it only asks for the RoCE resource",
                           f"{target}.roce-single-node"))
    for name, what in (("cpus", "sizes"), ("ready_timeout_s", "bounds the wait for")):
        if getattr(ray_nodes, name) != type(ray_nodes).model_fields[name].default:
            found.append(_warn((name,), f"{name} {what} the node bundles of a multi-node run; "
                               "this job has one node", f"{target}.single-node"))
    return found


def check(job: Job, target: str) -> list[Diagnostic]:
    """What a multi-node Ray run cannot do, located."""
    found = _inert_settings(job, target)
    if job.nodes == 1:
        return found
    if not job.launcher_facts.cpu_multiprocess and job.gpus_per_node == 0:
        found.append(Diagnostic(
            Severity.ERROR, "torchtune 0.6.1's distributed recipes do not run on CPU nodes: "
            "they start the process group as cuda:nccl,cpu:gloo and read GPU memory stats",
            path=("resources", "gpus_per_node"),
            hint="give each node GPUs, or use launcher: accelerate for a CPU run",
            code=f"{target}.torchtune-cpu-nodes"))
    return found
