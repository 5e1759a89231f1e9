"""Proportion's water filling (volcano.md §6.6): each queue's deserved share, round by round.

In every round each queue not yet met takes its weight's part of what remains, clamped to its
real capability and its request and floored by its guarantee; a queue is met once its request
fits or it stops growing; what queues gave back or took is settled after the round. Volcano
walks the queues one after the other (``tests/scheduler/test_proportion_water_fill.py`` keeps
that loop as the reference); both versions here give its answers bit for bit:

* :func:`_fill_arrays` runs all queues of a round at once, as (queues × dims) arrays. Each
  element goes through the same float operations, and a round's increase and decrease are
  summed queue after queue (``cumsum`` is sequential).
* :func:`_fill_floats` does the same operations on Python floats. A session has a handful of
  queues and dimensions, where numpy's per-call cost was most of the time (~60 calls for one
  round, ~0.4 ms; the floats take a tenth of that). It is used when every input is finite and
  none is negative or ``-0.0``: then no ``nan`` or signed zero can arise, and Python's
  ``min``/``max`` pick what ``np.minimum``/``np.maximum`` pick.
"""

from __future__ import annotations

from itertools import chain
from typing import Protocol, Sequence

import numpy as np

from member_agent.scheduler.framework.dims import TOLERANCE, Dimensions, Vector, is_empty
from member_agent.scheduler.framework.memo import remember


class QueueAttr(Protocol):
    """What water filling reads and sets of a queue (``proportion_opening.QueueAttr``)."""

    weight: int
    real_capability: Vector
    request: Vector
    guarantee: Vector
    allocated: Vector
    deserved: Vector
    share: float


def water_fill(attrs: Sequence[QueueAttr], total: Vector, always: np.ndarray) -> None:
    """Set each queue's ``deserved`` and ``share`` (``attrs`` in the session's queue order)."""
    if attrs and not _fill_floats(attrs, total, always):
        _fill_arrays(attrs, total, always)


def _fill_floats(attrs: Sequence[QueueAttr], total: Vector, always: np.ndarray) -> bool:
    """The rounds on Python floats; False (nothing done) when an input is outside their domain.
    ``min``/``max`` are comparisons here, and a row's share is found in the same pass."""
    block = np.array([(a.real_capability, a.request, a.guarantee, a.allocated, a.deserved) for a in attrs],
                     dtype=float)
    if not (np.isfinite(block).all() and np.isfinite(total).all()) or np.signbit(block).any() \
            or np.signbit(total).any():
        return False
    shares = [float(a.share) for a in attrs]
    weights = [a.weight for a in attrs]
    key = (block.shape, block.tobytes(), total.tobytes(), always.tobytes(), tuple(weights), tuple(shares))
    filled = _FILLED.get(key)
    if filled is None:
        filled = remember(_FILLED, key, _fill_rows(block.tolist(), weights, shares, always.tolist(), total.tolist()),
                          _FILLED_KEPT)
    deserved, shares = filled
    out = np.array(deserved, dtype=float)  # a fresh array per call: callers own what they are given
    for i, attr in enumerate(attrs):
        attr.deserved = out[i]
        attr.share = shares[i]
    return True


def fill_values(rows: Sequence[tuple[Vector, Vector, Vector, Vector]], weights: list[int], total: Vector,
                always: np.ndarray) -> tuple[list[list[float]], list[float]] | None:
    """What :func:`_fill_floats` sets on fresh queues (``deserved`` zero, ``share`` 0.0), from each
    queue's (real capability, request, guarantee, allocated) without the queues: every queue's
    deserved and share as Python floats, or None when an input is outside the floats' domain.

    For proportion's opening, which has the vectors: one array of every input instead of a
    (queues x 5 x dims) array built from the queues' attributes, and no memo of its own (the
    caller remembers its whole opening by the same inputs)."""
    width = len(total)
    flat = np.concatenate([*chain.from_iterable(rows), total], dtype=float)
    if not np.isfinite(flat).all() or np.signbit(flat).any():
        return None
    values = flat.tolist()
    blocks = []
    for at in range(0, len(rows) * 4 * width, 4 * width):
        capability, request, guarantee, allocated = (values[at + k * width:at + (k + 1) * width] for k in range(4))
        blocks.append([capability, request, guarantee, allocated, [0.0] * width])
    return _fill_rows(blocks, weights, [0.0] * len(rows), always.tolist(), values[-width:] if width else [])


#: Inputs (as bytes) -> the rounds' result. In a replay about 40 % of sessions open with the
#: queues exactly as an earlier one (nothing arrived or ended in between that moved a sum).
_FILLED: dict[tuple[object, ...], tuple[list[list[float]], list[float]]] = {}
_FILLED_KEPT = 32


def _fill_rows(rows: list[list[list[float]]], weights: list[int], shares: list[float], flags: list[bool],
               remaining: list[float]) -> tuple[list[list[float]], list[float]]:
    """The rounds over each queue's (capability, request, guarantee, allocated, deserved) row:
    every queue's deserved and share."""
    deserved: list[list[float]] = [row[4] for row in rows]
    shares = list(shares)
    pods = Dimensions.PODS
    met = [False] * len(rows)
    while True:
        open_rows = [i for i, done in enumerate(met) if not done]
        total_weight = sum(weights[i] for i in open_rows)
        if total_weight == 0:
            break
        increased = [0.0] * len(remaining)
        decreased = [0.0] * len(remaining)
        for i in open_rows:
            capability, request, guarantee, allocated, _ = rows[i]
            part = weights[i] / total_weight
            old = deserved[i]
            new = []
            fit = True
            share = None
            for d, (o, r, c, q, g, a, flag) in enumerate(zip(old, remaining, capability, request, guarantee, allocated,
                                                              flags, strict=True)):
                v = o + r * part
                if c < v:
                    v = c
                if q < v:
                    v = q
                if v < g:
                    v = g
                new.append(v)
                if (q != 0 or flag) and not q < v + TOLERANCE:
                    fit = False
                if v >= 0.1:
                    ratio = a / v
                    if share is None or ratio > share:
                        share = ratio
                if v > o:  # the arrays add max(v - o, 0.0): adding 0.0 changes no sum
                    increased[d] += v - o
                elif o > v:
                    decreased[d] += o - v
            deserved[i] = new
            shares[i] = 0.0 if share is None else share
            if fit or new == old:
                met[i] = True
        old_remaining = remaining
        remaining = []
        empty = True
        for d, (r, dec, inc) in enumerate(zip(old_remaining, decreased, increased, strict=True)):
            v = r + dec - inc
            if v < 0.0:
                v = 0.0
            remaining.append(v)
            if d != pods and not v < TOLERANCE:
                empty = False
        if empty or remaining == old_remaining:
            break
    return deserved, shares


def _fill_arrays(attrs: Sequence[QueueAttr], total: Vector, always: np.ndarray) -> None:
    """The rounds as (queues × dims) arrays: any input (``inf`` capabilities, signed zeros)."""
    weights = [a.weight for a in attrs]
    capability = np.array([a.real_capability for a in attrs])
    request = np.array([a.request for a in attrs])
    guarantee = np.array([a.guarantee for a in attrs])
    allocated = np.array([a.allocated for a in attrs])
    deserved = np.array([a.deserved for a in attrs], dtype=float)
    shares = np.array([a.share for a in attrs], dtype=float)
    checked = (request != 0) | always  # the dims ``fits`` compares, per queue
    met = np.zeros(len(attrs), dtype=bool)
    remaining = total.copy()
    zeros = np.zeros((1, len(total)))
    while True:
        rows = np.flatnonzero(~met)
        total_weight = sum(weights[i] for i in rows)
        if total_weight == 0:
            break
        old_remaining = remaining.copy()
        old = deserved[rows]
        parts = np.array([weights[i] / total_weight for i in rows])
        new = old + remaining * parts[:, None]
        new = np.minimum(new, capability[rows])
        new = np.minimum(new, request[rows])
        new = np.maximum(new, guarantee[rows])
        deserved[rows] = new
        shares[rows] = _shares(allocated[rows], new)
        fit = np.all((request[rows] < new + TOLERANCE) | ~checked[rows], axis=1)
        met[rows[fit | np.all(new == old, axis=1)]] = True
        increased = np.cumsum(np.vstack([zeros, np.maximum(new - old, 0.0)]), axis=0)[-1]
        decreased = np.cumsum(np.vstack([zeros, np.maximum(old - new, 0.0)]), axis=0)[-1]
        remaining = np.maximum(remaining + decreased - increased, 0.0)
        if is_empty(remaining) or np.array_equal(remaining, old_remaining):
            break
    for i, attr in enumerate(attrs):
        attr.deserved = deserved[i].copy()
        attr.share = float(shares[i])


def _shares(allocated: np.ndarray, deserved: np.ndarray) -> np.ndarray:
    """``proportion.queue_share`` of each row."""
    mask = deserved >= 0.1
    ratios = np.divide(allocated, deserved, out=np.full_like(deserved, -np.inf), where=mask)
    return np.where(mask.any(axis=1), ratios.max(axis=1, initial=-np.inf), 0.0)
