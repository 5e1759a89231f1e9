"""Kubernetes Topology Manager hint generation and merging, on NUMA bitmasks (volcano.md §6.10).

A *hint* is ``(mask, preferred)``: the set of NUMA nodes a resource could come from, and
whether that set is as narrow as it could ever be for the request. Each resource provider
(CPU manager for whole CPUs, device manager for GPUs) lists a hint for every NUMA subset with
enough free capacity; ``preferred`` iff the subset's size equals the smallest subset whose
*total* capacity could hold the request. Merging takes the cartesian product of the
providers' hints, ANDs the masks (dropping empty ones) and keeps the best: preferred over
not preferred, then the narrower mask (fewer NUMA nodes, then the lower ids). A provider
with no opinion contributes ``{any, preferred}``; one that cannot satisfy the request at
all contributes ``{any, not preferred}``.

Policies: ``none`` and ``best-effort`` admit every pod; ``restricted`` admits only a
preferred merged hint; ``single-numa-node`` first keeps only preferred single-node hints,
then admits only a preferred merged hint.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Sequence

Hint = tuple[int, bool]  # (NUMA bitmask, preferred)


def bits(mask: int) -> int:
    return bin(mask).count("1")


def ids(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


def resource_hints(request: int, total: Sequence[int], free: Sequence[int]) -> list[Hint]:
    """Hints of one provider for ``request`` units, given per-NUMA total and free units."""
    n = len(total)
    masks = range(1, 1 << n)
    minimum = min((bits(m) for m in masks if sum(total[i] for i in ids(m)) >= request), default=n + 1)
    return [(m, bits(m) == minimum) for m in masks if sum(free[i] for i in ids(m)) >= request]


def _better(candidate: Hint, best: Hint) -> bool:
    if candidate[1] != best[1]:
        return candidate[1]
    cb, bb = bits(candidate[0]), bits(best[0])
    if cb != bb:
        return cb < bb
    return candidate[0] < best[0]


def merge(numa_count: int, providers: Sequence[list[Hint] | None], single_numa: bool = False) -> Hint:
    """The best merged hint over every provider (``None`` = no preference)."""
    everything = (1 << numa_count) - 1
    lists: list[list[Hint]] = []
    for hints in providers:
        if hints is None:
            lists.append([(everything, True)])
            continue
        if single_numa:
            hints = [h for h in hints if h[1] and bits(h[0]) == 1]
        lists.append(hints or [(everything, False)])
    best: Hint = (everything, False)
    for combo in product(*lists):
        mask, preferred = everything, True
        for m, p in combo:
            mask &= m
            preferred = preferred and p
        if mask and _better((mask, preferred), best):
            best = (mask, preferred)
    return best


def admits(policy: str, hint: Hint) -> bool:
    if policy in ("restricted", "single-numa-node"):
        return hint[1]
    return True


@dataclass(frozen=True)
class Decision:
    """The NUMA nodes a pod's pinned CPUs and GPUs come from, and whether the policy admits it."""

    mask: int
    preferred: bool
    admitted: bool

    @property
    def numa_ids(self) -> tuple[int, ...]:
        return ids(self.mask)


def decide(policy: str, numa_count: int, cpus: int, cpu_total: Sequence[int], cpu_free: Sequence[int],
           gpus: int, gpu_total: Sequence[int], gpu_free: Sequence[int]) -> Decision:
    """Merge the CPU and GPU providers' hints for one pod under the node's ``policy``."""
    providers: list[list[Hint] | None] = [
        resource_hints(cpus, cpu_total, cpu_free) if cpus > 0 else None,
        resource_hints(gpus, gpu_total, gpu_free) if gpus > 0 else None,
    ]
    hint = merge(numa_count, providers, single_numa=policy == "single-numa-node")
    return Decision(hint[0], hint[1], admits(policy, hint))
