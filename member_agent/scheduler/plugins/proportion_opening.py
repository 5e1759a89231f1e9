"""What proportion's opening derives from the queues, the cluster total and each queue's sums, and
the memos that carry it between sessions (``plugins/proportion.py`` reads it).

Each queue's guarantee and capability vectors are kept on its spec; the real capabilities per set of
queues (``_CAPABILITIES``); water filling's deserved and its inverses by the inputs of a queue's deserved
(``_OPENED``): the queues, the total and the requests. ``allocated`` is read by the fill's shares only,
so a remembered fill answers a session whose ``allocated`` moved, with the shares worked out again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from member_agent.scheduler.framework.dims import Dimensions, Vector
from member_agent.scheduler.framework.memo import remember
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import QueueSpec
from member_agent.scheduler.plugins.drf_shares import largest_product
from member_agent.scheduler.plugins.water_fill import fill_values, water_fill

#: A queue spec's memo entry of its vectors.
_MEMO_KEY = "proportion"


@dataclass
class QueueAttr:
    name: str
    weight: int
    priority: int
    state: str
    capability: Vector  # +inf where unlimited
    guarantee: Vector
    real_capability: Vector
    allocated: Vector
    request: Vector
    inqueue: Vector
    elastic: Vector
    deserved: Vector
    inv_deserved: Vector | None = None
    inv_any: bool = False  # inv_deserved has a non-zero entry (read on every allocation)
    _share: float = 0.0
    #: ``allocated`` changed since the share was last worked out. The share is a function of
    #: ``allocated`` and the inverses alone, so working it out when read gives what an update per
    #: placement gave, while placements change it once per task and the queue order reads it per pop.
    stale: bool = False

    @property
    def share(self) -> float:
        if self.stale:
            inv = self.inv_deserved
            self._share = largest_product(self.allocated.tolist(), inv.tolist()) if inv is not None and self.inv_any else 0.0
            self.stale = False
        return self._share

    @share.setter
    def share(self, value: float) -> None:
        self._share = value
        self.stale = False


def capability_vector(dims: Dimensions, queue: QueueSpec) -> Vector:
    """Spec capability with +inf for unset dims (and for cpu/memory <= 0)."""
    cap = np.full(len(dims), np.inf)
    for name, amount in (queue.capability or {}).items():
        i = dims.index.get(name)
        if i is not None:
            cap[i] = amount
    for i in (Dimensions.CPU, Dimensions.MEMORY):
        if cap[i] <= 0:
            cap[i] = np.inf
    return cap


def inverses(rows: np.ndarray) -> np.ndarray:
    """Per row, 1/x on dims where x >= 0.1, else 0: ``max(a * inverse)`` is the share of ``a``."""
    out = np.zeros_like(rows)
    mask = rows >= 0.1
    out[mask] = 1.0 / rows[mask]
    return out


def has_nonzero(rows: np.ndarray) -> tuple[bool, ...]:
    """Per row, whether any value is not zero (``count_nonzero > 0``: a float is truthy exactly
    when it is not zero, NaN included), over Python floats: numpy's per-axis count cost more."""
    return tuple(map(any, rows.tolist()))


def queue_vectors(dims: Dimensions, queue: QueueSpec) -> tuple[Vector, Vector]:
    """A queue's guarantee and :func:`capability_vector`, read-only, kept in its spec's memo (an
    unchanged Queue keeps its spec across the cache's snapshots: built once, not per session)."""
    kept = queue.memo.get(_MEMO_KEY)
    if kept is None or kept[0] is not dims:
        guarantee, capability = dims.vector(queue.guarantee), capability_vector(dims, queue)
        guarantee.setflags(write=False)
        capability.setflags(write=False)
        kept = queue.memo[_MEMO_KEY] = (dims, guarantee, capability)
    return kept[1], kept[2]


@dataclass(frozen=True)
class _Opening:
    """What opening derives from the queues, the cluster total and each queue's request, per queue
    in the usage's order: the same in every session whose inputs are equal. Water filling reads
    ``allocated`` only for the shares (a queue's deserved never depends on it), so ``shares`` are
    those of the session that filled; another session works each queue's out (:func:`share_of`)."""

    dims: Dimensions
    queues: tuple[QueueSpec, ...]  # held, so the ids in the key stay theirs
    vectors: tuple[tuple[Vector, Vector], ...]  # guarantee, capability
    real: np.ndarray  # read-only rows
    deserved: np.ndarray  # read-only: each session takes a copy
    shares: tuple[float, ...]
    inverse: np.ndarray  # read-only: each session takes a copy
    inv_any: tuple[bool, ...]
    #: ``deserved`` as Python floats when filled on them (every input in their domain), else None:
    #: only such an entry answers a session whose ``allocated`` differ
    deserved_rows: tuple[list[float], ...] | None = None


def _queues_key(ssn: Session) -> tuple[object, ...]:
    """The part of both memos' keys that names the session's dims, Queue specs (by identity: each
    memo's value holds them) and cluster total."""
    return id(ssn.dims), tuple(ssn.queues), tuple(map(id, ssn.queues.values())), ssn.total.tobytes()


def _opened(ssn: Session, sums: dict[str, np.ndarray]) -> tuple[_Opening, tuple[float, ...] | None]:
    """:func:`_open`'s answer and this session's shares, remembered by the inputs of a queue's
    deserved (``_OPENED``: the queues, the total and the requests, not ``allocated``): a replay's
    session opens with the queues' requests as some earlier session did about two times in three
    (a bind moves ``allocated`` alone). A remembered fill on floats answers with None for the shares:
    each queue's is :func:`share_of` its ``allocated`` and deserved row, worked out for the queues a
    session reads (one or two of a dozen: only their attributes are built)."""
    dims = ssn.dims
    queues = _queues_key(ssn)
    key = (*queues, tuple(sums), b"".join([block[1].tobytes() for block in sums.values()]))
    found = _OPENED.get(key)
    if found is not None and found.dims is dims and found.deserved_rows is not None and _in_domain(sums):
        return found, None
    found = remember(_OPENED, key, _open(ssn, sums, queues), _OPENED_KEPT)
    return found, found.shares


def _in_domain(sums: dict[str, np.ndarray]) -> bool:
    """Whether every ``allocated`` value is finite and not negative (nor ``-0.0``): the floats'
    domain, where :func:`share_of` gives water filling's shares (else the fill takes the arrays)."""
    if not sums:
        return True
    allocated = np.concatenate([block[0] for block in sums.values()], dtype=float)
    return bool(np.isfinite(allocated).all() and not np.signbit(allocated).any())


def share_of(allocated: list[float], deserved: list[float]) -> float:
    """A queue's share as water filling on floats leaves it: the largest ``allocated / deserved``
    over dims deserving at least 0.1 (0.0 when none), the same divisions of the same floats as the
    queue's last round (a queue's deserved is final after the last round that moved it, and every
    queue goes through the first round unless all weights are 0, when deserved stays zero)."""
    share = None
    for a, v in zip(allocated, deserved, strict=True):
        if v >= 0.1:
            ratio = a / v
            if share is None or ratio > share:
                share = ratio
    return 0.0 if share is None else share


#: Inputs -> what opening derived from them (ids of objects the value holds, and bytes).
_OPENED: dict[tuple[object, ...], _Opening] = {}
_OPENED_KEPT = 32


def _open(ssn: Session, sums: dict[str, np.ndarray], queues: tuple[object, ...]) -> _Opening:
    """Each queue's real capability, then water filling (deserved and share) and the inverses
    of what it deserves; reads the queues, the total and each queue's allocated and request.
    On Python floats from the vectors (:func:`fill_values`) when every input is in their domain,
    the inverses too (``1.0 / x`` is the same IEEE division as numpy's); else on the queues'
    attributes (:func:`_open_attrs`)."""
    dims = ssn.dims
    names = list(sums)
    vectors, real = _capabilities(ssn, tuple(names), queues)
    filled = None
    if names:
        rows = [(real[i], block[1], vectors[name][0], block[0]) for i, (name, block) in enumerate(sums.items())]
        filled = fill_values(rows, [ssn.queues[name].weight for name in names], ssn.total, dims.always)
    if filled is None:
        return _open_attrs(ssn, sums, vectors, real)
    deserved_rows, shares = filled
    inverse_rows = [[1.0 / value if value >= 0.1 else 0.0 for value in row] for row in deserved_rows]
    deserved, inverse = np.array(deserved_rows, dtype=float), np.array(inverse_rows, dtype=float)
    for array in (deserved, inverse):
        array.setflags(write=False)
    return _Opening(dims, tuple(ssn.queues.values()), tuple(vectors[n] for n in names), real, deserved,
                    tuple(shares), inverse, tuple(map(any, inverse_rows)), tuple(deserved_rows))


def _open_attrs(ssn: Session, sums: dict[str, np.ndarray], vectors: dict[str, tuple[Vector, Vector]],
                real: np.ndarray) -> _Opening:
    """:func:`_open` through :func:`water_fill` on each queue's attributes: any input."""
    dims = ssn.dims
    names = list(sums)
    attrs = []
    for i, name in enumerate(names):
        queue, block = ssn.queues[name], sums[name]
        guarantee, capability = vectors[name]
        attrs.append(QueueAttr(
            name=name, weight=queue.weight, priority=queue.priority, state=queue.state,
            capability=capability, guarantee=guarantee, real_capability=real[i],
            allocated=block[0], request=block[1], inqueue=block[3], elastic=block[2],
            deserved=dims.zeros(),
        ))
    water_fill(attrs, ssn.total, dims.always)
    deserved = np.array([attr.deserved for attr in attrs]).reshape(len(attrs), len(dims))
    inverse = inverses(deserved)
    inv_any = has_nonzero(inverse)
    for array in (deserved, inverse):
        array.setflags(write=False)
    return _Opening(dims, tuple(ssn.queues.values()), tuple(vectors[n] for n in names), real, deserved,
                    tuple(attr.share for attr in attrs), inverse, inv_any)


def _capabilities(ssn: Session, names: tuple[str, ...],
                  queues: tuple[object, ...]) -> tuple[dict[str, tuple[Vector, Vector]], np.ndarray]:
    """Every queue's guarantee and capability vectors, and the real capability of each of
    ``names`` (read-only rows), remembered by the queues, the total and ``names``: opening
    misses ``_OPENED`` whenever a queue's sums moved, while these inputs seldom change."""
    dims = ssn.dims
    key = (*queues, names)
    found = _CAPABILITIES.get(key)
    if found is None or found[0] is not dims:
        vectors = {name: queue_vectors(dims, queue) for name, queue in ssn.queues.items()}
        total_guarantee = dims.zeros()
        for guarantee, _capability in vectors.values():
            total_guarantee += guarantee
        real = np.zeros((0, len(dims)))
        if names:
            # Each queue's real capability, all queues at once (the same operations per element):
            # what the others' guarantees leave, plus its own, within its spec's capability.
            real = np.maximum(ssn.total - total_guarantee, 0.0) + np.array([vectors[n][0] for n in names])
            capped = [i for i, n in enumerate(names) if ssn.queues[n].capability]
            if capped:
                real[capped] = np.minimum(real[capped], np.array([vectors[names[i]][1] for i in capped]))
        real.setflags(write=False)
        # the value holds the dims and the queue specs, so the ids in the key stay theirs
        found = remember(_CAPABILITIES, key, (dims, tuple(ssn.queues.values()), vectors, real), _OPENED_KEPT)
    return found[2], found[3]


_CAPABILITIES: dict[tuple[object, ...], tuple[Dimensions, tuple[QueueSpec, ...], dict[str, tuple[Vector, Vector]],
                                              np.ndarray]] = {}
