"""Resource names as Prometheus sees them: label names and amounts in natural units.

Both planes export per-resource gauges. The seed's alert selects GPU series with
``volcano_queue_allocated{nvidia_com_gpu != ""}``: a series carries, besides ``resource``, a label
named after its resource (``nvidia.com/gpu`` -> ``nvidia_com_gpu``) whose value is the resource's
name, so a selector on that label picks exactly that resource's series and the allocated and
capability series of one queue still have identical label sets (they divide one-to-one).
"""

from __future__ import annotations

import re

from policies.quantity import QuantityLike
from policies.resources import MEMORY, PODS, to_internal

_NOT_LABEL = re.compile(r"[^a-zA-Z0-9_]")
#: GPU resources named in the dashboards and alerts: whole GPUs, then HAMi's shares (Volcano's
#: vGPU device plugin and HAMi's own names)
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores", "volcano.sh/vgpu-number",
                 "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores")


def label_name(resource: str) -> str:
    """``nvidia.com/gpu`` -> ``nvidia_com_gpu``: a valid Prometheus label name for a resource."""
    name = _NOT_LABEL.sub("_", resource)
    return f"_{name}" if name[:1].isdigit() else name


def natural_amount(resource: str, quantity: QuantityLike) -> float:
    """The amount in the unit people read: CPU cores, memory bytes, GPU count, pods."""
    value = to_internal(resource, quantity)
    return value if resource in (MEMORY, PODS) else value / 1000.0


def resource_labels(resource: str) -> dict[str, str]:
    """The labels a per-resource series carries (see the module docstring)."""
    return {"resource": resource, label_name(resource): resource}
