"""The fast component-set estimate against a brute-force, node-by-node first-fit.

The brute force is Karmada's simulation taken literally: expand every group into its nodes,
then set after set, component after component, walk the nodes in order and put
``min(remaining, fit)`` pods on each, consumption persisting. The fast version works per run of
identical nodes and jumps repeating periods; both must give the same (sets, partial).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.placement.estimate import MAX_SETS, Component, Groups, max_sets

COLUMNS = {"cpu": 0, "nvidia.com/gpu": 1, "pods": 2}
HUGE = (2**63 - 1) // 4


def brute_force(counts: list[int], free: list[list[float]], labels: list[dict[str, str]],
                components: list[Component], upper: int) -> tuple[int, int]:
    nodes = [(list(row), lab) for n, row, lab in zip(counts, free, labels, strict=True) for _ in range(n)]
    for sets in range(upper):
        placed = 0
        for comp in components:
            request = dict(comp.request)
            missing = any(r not in COLUMNS for r, a in comp.request if a > 0)
            rem = comp.replicas
            for node, lab in nodes:
                if rem <= 0 or missing:
                    break
                if any(lab.get(k) != v for k, v in comp.node_selector):
                    continue
                needs = [(COLUMNS[r], a) for r, a in request.items() if a > 0]
                fit = HUGE if not needs else max(0, min(math.floor((node[j] + 1e-6) / a) for j, a in needs))
                take = min(rem, fit)
                for r, a in request.items():
                    node[COLUMNS[r]] -= take * a
                rem -= take
            placed += comp.replicas - rem
            if rem:
                return sets, placed
    return upper, 0


@st.composite
def cases(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    n_groups = draw(st.integers(1, 4))
    counts = [draw(st.integers(0, 12)) for _ in range(n_groups)]
    free = [[float(draw(st.sampled_from([0, 2000, 8000, 32000]))), float(draw(st.integers(0, 8)) * 1000),
             float(draw(st.sampled_from([110, 4, 1])))] for _ in range(n_groups)]
    labels = [{"zone": draw(st.sampled_from(["x", "y"]))} for _ in range(n_groups)]
    comps = []
    for _ in range(draw(st.integers(1, 3))):
        request: dict[str, float] = {"pods": 1.0} if draw(st.booleans()) else {}
        request["nvidia.com/gpu"] = float(draw(st.sampled_from([0, 1, 2, 4, 8])) * 1000)
        request["cpu"] = float(draw(st.sampled_from([0, 500, 4000])))
        if draw(st.integers(0, 9)) == 0:
            request["example.com/fpga"] = 1000.0  # no node has it
        selector = (("zone", draw(st.sampled_from(["x", "y"]))),) if draw(st.integers(0, 3)) == 0 else ()
        comps.append(Component(tuple(sorted(request.items())), selector, draw(st.integers(1, 9))))
    if draw(st.integers(0, 3)) == 0:  # one pod shape for every component: the closed form
        comps = [Component(comps[0].request, comps[0].node_selector, c.replicas) for c in comps]
    upper = draw(st.sampled_from([1, 2, 7, 50, MAX_SETS]))
    return counts, free, labels, comps, upper


def groups(counts: list[int], free: list[list[float]], labels: list[dict[str, str]]) -> Groups:
    return Groups(np.array(counts, dtype=np.int64), np.array(free, dtype=float).reshape(len(counts), 3),
                  labels, dict(COLUMNS))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fast_estimate_equals_node_by_node_first_fit(case) -> None:  # type: ignore[no-untyped-def]
    counts, free, labels, comps, upper = case
    g = groups(counts, free, labels)
    before = (g.counts.copy(), g.free.copy())
    assert max_sets(g, comps, upper) == brute_force(counts, free, labels, comps, upper)
    assert (g.counts == before[0]).all() and (g.free == before[1]).all()  # the input is not consumed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.integers(1, 9), st.integers(0, 400), st.integers(0, 60), st.integers(1, 6))
def test_long_periodic_runs_are_jumped_exactly(master_cpu: int, workers: int, big: int, small: int,
                                               worker_gpus: int) -> None:
    """Hundreds of nodes and sets, where the periods are what makes it fast."""
    counts = [big, small]
    free = [[128000.0, 8000.0, 110.0], [64000.0, 4000.0, 110.0]]
    labels: list[dict[str, str]] = [{}, {}]
    comps = [Component((("cpu", master_cpu * 1000.0), ("pods", 1.0)), (), 1),
             Component((("nvidia.com/gpu", worker_gpus * 1000.0), ("pods", 1.0)), (), workers)]
    assert max_sets(groups(counts, free, labels), comps, MAX_SETS) == brute_force(counts, free, labels, comps,
                                                                                  MAX_SETS)


def test_a_state_that_repeats_exactly_fits_up_to_the_bound() -> None:
    """Pods asking for nothing change nothing: every set fits, up to ``upper``."""
    comps = [Component((), (), 3)]
    assert max_sets(groups([2], [[1000.0, 0.0, 110.0]], [{}]), comps, 25) == (25, 0)
