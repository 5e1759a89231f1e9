"""What a pod asks of a node's GPUs: a :class:`Demand` read from its request vector.

Kept apart from the device ledger that grants it, so the carried GPUs of left-out jobs
(``plugins/device_carry.py``) and the ledger can both read demands without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

GPU = "nvidia.com/gpu"
GPU_MEMORY = "nvidia.com/gpumem"
GPU_CORES = "nvidia.com/gpucores"


@dataclass(frozen=True)
class Demand:
    gpus: int  # whole GPUs, or virtual GPUs when shared
    memory: float  # GB per virtual GPU
    cores: float  # percent per virtual GPU
    shared: bool
    cpus: int  # whole CPUs to pin (0: none)

    @property
    def any_gpu(self) -> bool:
        return self.gpus > 0


NO_DEMAND = Demand(0, 0.0, 0.0, False, 0)


def gpu_demand(req: tuple[float, ...], index: Mapping[str, int], cpus: int = 0) -> Demand:
    """The GPU demand of a request vector (``framework/dims.py`` units, milli)."""

    def amount(name: str) -> float:
        i = index.get(name)
        return req[i] / 1000 if i is not None else 0.0

    memory, cores, gpus = amount(GPU_MEMORY), amount(GPU_CORES), amount(GPU)
    shared = memory > 0 or cores > 0
    count = max(1, int(gpus)) if shared else int(gpus)
    if count == 0 and cpus == 0:
        return NO_DEMAND
    return Demand(count, memory, cores, shared, cpus)
