"""Accelerators ftspec knows: memory, bf16 support, and the Kubernetes node label value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerator:
    key: str
    """The spec's name, e.g. ``nvidia-a100-80gb``."""
    display: str
    memory_gib: float
    bf16: bool
    """Ampere (sm_80) or newer supports bf16 natively."""
    architecture: str
    product_label: str
    """Typical ``nvidia.com/gpu.product`` node label value (GPU feature discovery)."""


ACCELERATORS: dict[str, Accelerator] = {
    a.key: a
    for a in (
        Accelerator("nvidia-t4", "NVIDIA T4", 16, False, "turing", "Tesla-T4"),
        Accelerator("nvidia-v100-16gb", "NVIDIA V100 16GB", 16, False, "volta", "Tesla-V100-SXM2-16GB"),
        Accelerator("nvidia-v100-32gb", "NVIDIA V100 32GB", 32, False, "volta", "Tesla-V100-SXM2-32GB"),
        Accelerator("nvidia-a10g", "NVIDIA A10G", 24, True, "ampere", "NVIDIA-A10G"),
        Accelerator("nvidia-l4", "NVIDIA L4", 24, True, "ada", "NVIDIA-L4"),
        Accelerator("nvidia-l40s", "NVIDIA L40S", 48, True, "ada", "NVIDIA-L40S"),
        Accelerator("nvidia-a100-40gb", "NVIDIA A100 40GB", 40, True, "ampere", "NVIDIA-A100-SXM4-40GB"),
        Accelerator("nvidia-a100-80gb", "NVIDIA A100 80GB", 80, True, "ampere", "NVIDIA-A100-SXM4-80GB"),
        Accelerator("nvidia-h100-80gb", "NVIDIA H100 80GB", 80, True, "hopper", "NVIDIA-H100-80GB-HBM3"),
        Accelerator("nvidia-h200", "NVIDIA H200", 141, True, "hopper", "NVIDIA-H200"),
    )
}

ACCELERATOR_NAMES: tuple[str, ...] = tuple(ACCELERATORS)
