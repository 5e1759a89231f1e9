"""Global task indices of the shares, kept stable across re-placements.

A share runs the replicas ``offset + i`` of each task (pods are named by that global index, and
``VC_TASK_INDEX`` is it). When a running job is placed again (scale up or down, a cluster lost
or joined) a share that survives keeps the indices its pods already have, so they are not
renamed, hence not restarted: each cluster first keeps its previous indices that are still
below the task's new total (lowest first, as many as its new share), then the free indices
are handed out in fill order. Without a previous assignment every share gets one contiguous
range in fill order, exactly the offsets Caldera always wrote. A share whose indices are not
one range carries them as ranges (``caldera.io/task-indices``, docs/protocol.md).
"""

from __future__ import annotations

from typing import Mapping, Sequence

Ranges = tuple[tuple[int, int], ...]  # half-open [start, end)


def assign(order: Sequence[str], counts: Mapping[str, int], total: int,
           previous: Mapping[str, Sequence[int]] | None = None) -> dict[str, list[int]]:
    """Per cluster (in ``order``), the sorted global indices of its ``counts[c]`` replicas."""
    out: dict[str, list[int]] = {}
    taken: set[int] = set()
    for c in order:
        held = sorted({i for i in (previous or {}).get(c, ()) if 0 <= i < total} - taken)
        out[c] = held[:counts.get(c, 0)]
        taken.update(out[c])
    free = (i for i in range(total) if i not in taken)
    for c in order:
        need = counts.get(c, 0) - len(out[c])
        if need > 0:
            out[c] = sorted(out[c] + [next(free) for _ in range(need)])
    return out


def to_ranges(indices: Sequence[int]) -> Ranges:
    ranges: list[tuple[int, int]] = []
    for i in sorted(indices):
        if ranges and ranges[-1][1] == i:
            ranges[-1] = (ranges[-1][0], i + 1)
        else:
            ranges.append((i, i + 1))
    return tuple(ranges)


def from_ranges(ranges: Sequence[Sequence[int]]) -> list[int]:
    return [i for start, end in ranges for i in range(int(start), int(end))]
