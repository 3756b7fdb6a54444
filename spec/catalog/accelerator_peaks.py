"""Peak figures of the accelerators in ``accelerators.ACCELERATORS``, for the throughput model
(``compiler/throughput.py``): one row per catalog key, each with the public page it is read
from (the vendor's datasheet).

- ``tflops_16bit``: dense tensor-core TFLOP/s in bf16, or fp16 where the GPU has no bf16
  (T4, V100). Datasheets print the 2:4-sparsity figure beside the dense one (marked with an
  asterisk); training runs dense, so the dense figure is the one kept.
- ``tflops_fp32``: non-tensor fp32 TFLOP/s (torch does not use TF32 for fp32 matmuls unless
  asked to).
- ``memory_gbps``: memory bandwidth, GB/s (10^9 bytes/s).
- ``link_gbps``: what one GPU can send to the others of its node, GB/s: NVLink where the
  form factor has it, else its PCIe link (one direction).

A row whose vendor publishes no datasheet figure holds None: the plan then predicts no time
for that accelerator instead of guessing one. Prices are not facts of the catalog: they come
from the user's pricing file (``compiler/pricing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Peak:
    tflops_16bit: float | None
    tflops_fp32: float | None
    memory_gbps: float | None
    link_gbps: float | None
    source: str
    """Where the figures are read from."""


_PCIE3 = 16.0
_PCIE4 = 32.0

PEAKS: dict[str, Peak] = {
    "nvidia-t4": Peak(65.0, 8.1, 320.0, _PCIE3,
                      "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
                      "t4-tensor-core-datasheet-951643.pdf (mixed-precision FP16/FP32 65 TFLOPS)"),
    "nvidia-v100-16gb": Peak(125.0, 15.7, 900.0, 300.0,
                             "https://images.nvidia.com/content/technologies/volta/pdf/"
                             "volta-v100-datasheet-update-us-1165301-r5.pdf (V100 SXM2)"),
    "nvidia-v100-32gb": Peak(125.0, 15.7, 900.0, 300.0,
                             "https://images.nvidia.com/content/technologies/volta/pdf/"
                             "volta-v100-datasheet-update-us-1165301-r5.pdf (V100 SXM2)"),
    "nvidia-a10g": Peak(None, None, 600.0, _PCIE4,
                        "AWS EC2 G5 page gives 600 GB/s; NVIDIA publishes no A10G datasheet "
                        "with its tensor-core peak, so none is assumed"),
    "nvidia-l4": Peak(121.0, 30.3, 300.0, _PCIE4,
                      "https://www.nvidia.com/en-us/data-center/l4/ datasheet (BF16 242 "
                      "TFLOPS with sparsity: 121 dense)"),
    "nvidia-l40s": Peak(362.05, 91.6, 864.0, _PCIE4,
                        "https://www.nvidia.com/en-us/data-center/l40s/ datasheet (BF16 "
                        "362.05 dense | 733 with sparsity)"),
    "nvidia-a100-40gb": Peak(312.0, 19.5, 1555.0, 600.0,
                             "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
                             "a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf "
                             "(A100 40GB SXM)"),
    "nvidia-a100-80gb": Peak(312.0, 19.5, 2039.0, 600.0,
                             "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
                             "a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf "
                             "(A100 80GB SXM)"),
    "nvidia-h100-80gb": Peak(989.0, 67.0, 3350.0, 900.0,
                             "https://resources.nvidia.com/en-us-tensor-core/"
                             "nvidia-tensor-core-gpu-datasheet (H100 SXM: BF16 1979 TFLOPS "
                             "with sparsity, 989 dense)"),
    "nvidia-h200": Peak(989.0, 67.0, 4800.0, 900.0,
                        "https://www.nvidia.com/en-us/data-center/h200/ datasheet (H200 SXM: "
                        "BF16 1979 TFLOPS with sparsity, 989 dense)"),
}


def peak_of(key: str | None) -> Peak | None:
    """The peak row of a spec's ``resources.accelerator`` (None when unset or unknown)."""
    return PEAKS.get(key) if key else None
