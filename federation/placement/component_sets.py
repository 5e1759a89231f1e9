"""The exact component-set estimate (Karmada's ``MaxAvailableComponentSets``), fast.

Semantics (unchanged, see :func:`federation.placement.estimate.max_sets`): whole sets are
placed one after the other; within a set, components in order; each component walks the nodes
in order and puts ``min(remaining, fit)`` replicas on every node it meets; consumption
persists from set to set; the answer is the number of whole sets placed (bounded by
``upper``) and the pods of the first failed set that were placed.

Why it is fast, and still exact:

* **Work per run of identical nodes, not per node.** Each input node group ``g`` (identical
  free vectors) is kept as a *modified prefix* ``M[g]`` (runs of identical nodes) followed by
  ``p[g]`` *pristine* nodes. Every placement reaches the pristine nodes of a group only after
  its modified ones, and pristine nodes are identical, so the nodes a walk modifies are always
  the group's next pristine ones: a placement on ``n`` identical nodes is one closed-form step
  (``full = rem // fit`` nodes take ``fit``, one node takes the rest).
* **Dead nodes are dropped** (no component of the job fits them any more; fits only shrink) and
  equal neighbouring runs are merged, so ``M`` stays a handful of runs.
* **Periods are jumped.** After every set the state is ``(M, p)``. When ``M`` repeats with
  ``p`` lowered by ``d`` over ``k`` sets, and during those sets no walk ran out of a pristine
  part it could use (``p[g] - d[g] >= 1`` wherever ``d[g] > 0``), the same ``k`` sets do
  exactly the same from any ``p' >= p - d`` whose pristine parts do not run out either: they
  map ``(M, p')`` to ``(M, p' - d)``. So ``j`` periods are applied at once, as many as keep
  every such pristine part non-empty; the rest is simulated set by set. An exactly repeated
  state (``d = 0``) means every further set fits: the answer is ``upper``.
* **One pod shape** (every component the same request and selector, amounts integral): closed
  form, ``T // n`` sets of ``n`` pods where ``T`` is the summed per-node fit.
* Fits are computed in pure Python per distinct free vector and memoised (arrays of a few
  numbers cost more in numpy calls than in arithmetic); the float operations are the same as
  the numpy path's (``floor((free + eps) / request)``, ``free - n * request``), so results are
  bit-for-bit the same.
"""

from __future__ import annotations

import math
from typing import Sequence

FreeVec = tuple[float, ...]
Run = tuple[int, FreeVec]  # (identical nodes, free vector)

_EPS = 1e-6
#: the fit of a request that asks for nothing (the numpy path's value)
UNBOUNDED_FIT = (2**63 - 1) // 4


class _Component:
    __slots__ = ("vec", "needs", "replicas", "mask", "fits")

    def __init__(self, vec: FreeVec | None, replicas: int, mask: list[bool]) -> None:
        self.vec = vec
        self.needs = [] if vec is None else [(j, a) for j, a in enumerate(vec) if a > 0]
        self.replicas = replicas
        self.mask = mask
        self.fits: dict[FreeVec, int] = {}

    def fit(self, free: FreeVec) -> int:
        """Pods of this component that fit on one node with ``free`` (selector aside)."""
        got = self.fits.get(free)
        if got is not None:
            return got
        if self.vec is None:
            f = 0
        elif not self.needs:
            f = UNBOUNDED_FIT
        else:
            f = min(math.floor((free[j] + _EPS) / a) for j, a in self.needs)
            f = max(f, 0)
        self.fits[free] = f
        return f

    def after(self, free: FreeVec, n: int) -> FreeVec:
        """``free - n * request`` (columns the request leaves at 0 are unchanged: x - n*0.0 == x)."""
        out = list(free)
        for j, a in self.needs:
            out[j] -= n * a
        return tuple(out)


def max_component_sets(counts: Sequence[int], free: Sequence[FreeVec], masks: Sequence[Sequence[bool]],
                       vectors: Sequence[FreeVec | None], replicas: Sequence[int],
                       upper: int) -> tuple[int, int]:
    """Whole sets that first-fit and pods of the next set placed.

    ``counts[g]``/``free[g]``: node groups in node order; ``vectors[c]`` a component's request
    over the same columns (None: it needs a resource no node has); ``masks[c][g]``: whether
    group ``g``'s labels satisfy component ``c``'s node selector.
    """
    if upper <= 0:
        return upper, 0
    keep = [g for g, n in enumerate(counts) if n > 0]
    comps = [_Component(vectors[c], replicas[c], [bool(masks[c][g]) for g in keep]) for c in range(len(vectors))]
    one = _one_shape(comps, [tuple(free[g]) for g in keep], [int(counts[g]) for g in keep], upper)
    if one is not None:
        return one
    pristine = [tuple(free[g]) for g in keep]
    p = [int(counts[g]) for g in keep]
    groups = range(len(keep))
    modified: list[list[Run]] = [[] for _ in groups]
    seen: dict[tuple[tuple[Run, ...], ...], tuple[int, list[int]]] = {}
    sets = 0
    while sets < upper:
        placed = 0
        touched: set[int] = set()
        for comp in comps:
            rem = comp.replicas
            if rem > 0:
                rem = _place(comp, rem, modified, pristine, p, touched)
            placed += comp.replicas - rem
            if rem:
                return sets, placed
        sets += 1
        for g in touched:
            modified[g] = _tidy(modified[g], comps, g)
        key = tuple(tuple(m) for m in modified)
        before = seen.get(key)
        seen[key] = (sets, list(p))
        if before is None:
            continue
        period = sets - before[0]
        drop = [old - now for old, now in zip(before[1], p, strict=True)]
        moving = [g for g in groups if drop[g] > 0]
        if not moving:  # the very same state: every further set goes the same way
            return upper, 0
        jumps = min((p[g] - 1) // drop[g] for g in moving)
        jumps = min(jumps, (upper - sets) // period)
        if jumps > 0:
            for g in groups:
                p[g] -= jumps * drop[g]
            sets += jumps * period
            seen = {key: (sets, list(p))}
    return upper, 0


def _one_shape(comps: list[_Component], free: list[FreeVec], counts: list[int], upper: int) -> tuple[int, int] | None:
    """The closed form when every component has the same request and node selector.

    Then a set is ``n`` pods of one shape first-fitted, and first-fit of one shape uses every
    pod slot there is: with ``T`` pods fitting in total, ``T // n`` sets fit and the next
    places ``T % n``. Exact when the amounts are integers (below 2**53): a node's fit after
    ``p`` pods is then exactly its fit minus ``p``. None: the simulation must run.
    """
    first = comps[0]
    if first.vec is None or not first.needs or any(c.vec != first.vec or c.mask != first.mask for c in comps):
        return None
    if any(c.replicas < 0 for c in comps):
        return None
    n = sum(c.replicas for c in comps)
    amounts = [a for _, a in first.needs] + [x for g, row in enumerate(free) if first.mask[g] for x in row]
    if not all(float(x).is_integer() and abs(x) < 2**53 for x in amounts):
        return None
    total = sum(count * first.fit(row) for row, count, usable in zip(free, counts, first.mask, strict=True) if usable)
    if n == 0 or total // n >= upper:
        return upper, 0
    sets = total // n
    return sets, total - sets * n


def _place(comp: _Component, rem: int, modified: list[list[Run]], pristine: list[FreeVec], p: list[int],
           touched: set[int]) -> int:
    """First-fit ``rem`` replicas of ``comp``; returns how many are left."""
    fits, fit, mask = comp.fits, comp.fit, comp.mask
    for g, runs in enumerate(modified):
        if not mask[g]:
            continue
        i = 0
        while i < len(runs):
            count, free = runs[i]
            f = fits.get(free)
            if f is None:
                f = fit(free)
            if f > 0:
                pieces, used = _pieces(comp, count, free, f, rem)
                runs[i:i + 1] = pieces
                touched.add(g)
                rem -= used
                if rem == 0:
                    return 0
                i += len(pieces)
            else:
                i += 1
        if p[g] > 0:
            f = fit(pristine[g])
            if f > 0:
                pieces, used = _pieces(comp, p[g], pristine[g], f, rem)
                if pieces[-1][1] is pristine[g]:  # the untouched rest stays pristine
                    pieces.pop()
                runs.extend(pieces)
                touched.add(g)
                p[g] -= sum(n for n, _ in pieces)
                rem -= used
                if rem == 0:
                    return 0
    return rem


def _pieces(comp: _Component, count: int, free: FreeVec, f: int, rem: int) -> tuple[list[Run], int]:
    """``count`` nodes with ``free`` after first-fitting up to ``rem`` pods, ``f`` per node:
    ``full`` nodes take ``f``, the next one the remainder, the rest nothing (in node order)."""
    full = min(count, rem // f)
    partial = rem - full * f if full < count else 0
    pieces: list[Run] = []
    if full:
        pieces.append((full, comp.after(free, f)))
    if partial:
        pieces.append((1, comp.after(free, partial)))
    rest = count - full - (1 if partial else 0)
    if rest:
        pieces.append((rest, free))
    return pieces, full * f + partial


def _tidy(runs: list[Run], comps: list[_Component], g: int) -> list[Run]:
    """Drop runs no component can use any more; merge equal neighbours."""
    out: list[Run] = []
    for count, free in runs:
        for c in comps:
            if c.mask[g]:
                f = c.fits.get(free)
                if (c.fit(free) if f is None else f) > 0:
                    break
        else:
            continue  # dead: no component fits it any more
        if out and out[-1][1] == free:
            out[-1] = (out[-1][0] + count, free)
        else:
            out.append((count, free))
    return out
