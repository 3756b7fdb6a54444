"""Accelerators ftspec knows, in one place: memory, bf16 support, the Kubernetes node label
and the Ray resource names. Every target reads these facts from here.

- ``memory_gib``: total memory as the device reports it (``nvidia-smi --query-gpu=memory.total``,
  MiB / 1024), not the marketing figure: an L40S ("48 GB") reports 46068 MiB = 44.99 GiB, an
  H100 80GB HBM3 81559 MiB = 79.65 GiB. The memory estimate compares against it.
- ``product_label``: the value of the node label ``nvidia.com/gpu.product`` that NVIDIA GPU
  feature discovery sets; the Kubernetes targets select GPU nodes with it.
- ``ray_type``: what Ray detects on a node with this GPU and advertises as the resource
  ``accelerator_type:<ray_type>`` (``ray.util.accelerators``; Ray drops the SKU suffix, so both
  A100s are ``A100``).
- ``gpu_resource``: the custom Ray resource named after the GPU model, whose amount is the
  node's device count, as the SFTTrainer seed's clusters declare it (``NVIDIA-A100-SXM4-80GB: 8``);
  by convention the same string as the node label value.
"""

from __future__ import annotations

from dataclasses import dataclass

NODE_LABEL = "nvidia.com/gpu.product"
"""Node label (GPU feature discovery) whose value is ``Accelerator.product_label``."""
RAY_TYPE_PREFIX = "accelerator_type:"
"""Ray's node resource for the detected accelerator: ``accelerator_type:A100`` = 1."""


@dataclass(frozen=True)
class Accelerator:
    key: str
    """The spec's name, e.g. ``nvidia-a100-80gb``."""
    display: str
    memory_gib: float
    """Total memory as the device reports it, GiB (see the module docstring)."""
    bf16: bool
    """Ampere (sm_80) or newer supports bf16 natively."""
    architecture: str
    product_label: str
    """``nvidia.com/gpu.product`` node label value (GPU feature discovery)."""
    ray_type: str
    """Ray's accelerator type for this GPU (``accelerator_type:<ray_type>``)."""

    @property
    def gpu_resource(self) -> str:
        """The seed's GPU-model Ray custom resource (amount = GPUs on the node)."""
        return self.product_label

    @property
    def ray_type_resource(self) -> str:
        return RAY_TYPE_PREFIX + self.ray_type


def _mib(mib: int) -> float:
    return round(mib / 1024, 2)


ACCELERATORS: dict[str, Accelerator] = {
    a.key: a
    for a in (
        Accelerator("nvidia-t4", "NVIDIA T4", _mib(15360), False, "turing", "Tesla-T4", "T4"),
        Accelerator("nvidia-v100-16gb", "NVIDIA V100 16GB", _mib(16160), False, "volta",
                    "Tesla-V100-SXM2-16GB", "V100"),
        Accelerator("nvidia-v100-32gb", "NVIDIA V100 32GB", _mib(32510), False, "volta",
                    "Tesla-V100-SXM2-32GB", "V100"),
        Accelerator("nvidia-a10g", "NVIDIA A10G", _mib(23028), True, "ampere", "NVIDIA-A10G",
                    "A10G"),
        Accelerator("nvidia-l4", "NVIDIA L4", _mib(23034), True, "ada", "NVIDIA-L4", "L4"),
        Accelerator("nvidia-l40s", "NVIDIA L40S", _mib(46068), True, "ada", "NVIDIA-L40S",
                    "L40S"),
        Accelerator("nvidia-a100-40gb", "NVIDIA A100 40GB", _mib(40960), True, "ampere",
                    "NVIDIA-A100-SXM4-40GB", "A100"),
        Accelerator("nvidia-a100-80gb", "NVIDIA A100 80GB", _mib(81920), True, "ampere",
                    "NVIDIA-A100-SXM4-80GB", "A100"),
        Accelerator("nvidia-h100-80gb", "NVIDIA H100 80GB", _mib(81559), True, "hopper",
                    "NVIDIA-H100-80GB-HBM3", "H100"),
        Accelerator("nvidia-h200", "NVIDIA H200", _mib(143771), True, "hopper", "NVIDIA-H200",
                    "H200"),
    )
}

ACCELERATOR_NAMES: tuple[str, ...] = tuple(ACCELERATORS)


def accelerator_of(key: str | None) -> Accelerator | None:
    """The catalog entry for a spec's ``resources.accelerator`` (None when unset)."""
    return ACCELERATORS.get(key) if key else None
