"""Proportion's water filling, done for all queues of a round at once, must give what the loop
over the queues gives (Volcano's order of operations), bit for bit."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from member_agent.scheduler.framework.dims import fits, is_empty
from member_agent.scheduler.plugins.proportion import QueueAttr, queue_share, water_fill

DIMS = 4  # cpu, memory, pods, one extended resource
ALWAYS = np.array([True, True, False, False])


def water_fill_loop(attrs: list[QueueAttr], total: np.ndarray, always: np.ndarray) -> None:
    """The reference: one queue after the other, as Volcano's proportion plugin does it."""
    remaining = total.copy()
    meet: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs if a.name not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.copy()
        increased = np.zeros_like(total)
        decreased = np.zeros_like(total)
        for attr in attrs:
            if attr.name in meet:
                continue
            old = attr.deserved.copy()
            deserved = attr.deserved + remaining * (attr.weight / total_weight)
            deserved = np.minimum(deserved, attr.real_capability)
            deserved = np.minimum(deserved, attr.request)
            deserved = np.maximum(deserved, attr.guarantee)
            attr.deserved = deserved
            attr.share = queue_share(attr.allocated, deserved)
            if fits(attr.request, deserved, always) or np.array_equal(deserved, old):
                meet.add(attr.name)
            increased += np.maximum(deserved - old, 0.0)
            decreased += np.maximum(old - deserved, 0.0)
        remaining = np.maximum(remaining + decreased - increased, 0.0)
        if is_empty(remaining) or np.array_equal(remaining, old_remaining):
            break


amounts = st.sampled_from([0.0, 0.05, 0.3, 1.0, 3.0, 7.5, 1000.0, 1e10, 3.3e12, np.inf])
vectors = st.lists(amounts, min_size=DIMS, max_size=DIMS)
queues = st.lists(st.tuples(st.integers(0, 5), vectors, vectors, vectors, vectors), min_size=1, max_size=7)


def _attrs(spec: list[tuple[int, list[float], list[float], list[float], list[float]]]) -> list[QueueAttr]:
    out = []
    for i, (weight, capability, request, guarantee, allocated) in enumerate(spec):
        z = np.zeros(DIMS)
        out.append(QueueAttr(name=f"q{i}", weight=weight, priority=0, state="Open", capability=np.array(capability),
                             guarantee=np.minimum(np.array(guarantee), 1e10), real_capability=np.array(capability),
                             allocated=np.minimum(np.array(allocated), 1e10), request=np.array(request),
                             inqueue=z.copy(), elastic=z.copy(), deserved=z.copy()))
    return out


@settings(max_examples=300, deadline=None)
@given(spec=queues, total=st.lists(amounts.filter(np.isfinite), min_size=DIMS, max_size=DIMS))
@example(spec=[(1, [np.inf] * 4, [3.0, 3.0, 0.0, 0.0], [0.0] * 4, [1.0] * 4),
               (2, [7.5, np.inf, np.inf, 1.0], [1000.0, 7.5, 1.0, 0.3], [0.3, 0.0, 0.0, 0.0], [0.0] * 4),
               (3, [np.inf] * 4, [1e10, 1e10, 1e10, 1e10], [0.0] * 4, [3.0, 0.0, 0.0, 0.0])],
         total=[1000.0, 3.3e12, 7.5, 3.0])  # three rounds: queues met one by one
def test_water_fill_over_all_queues_at_once_equals_the_loop(spec: list[tuple[int, list[float], list[float],
                                                                              list[float], list[float]]],
                                                            total: list[float]) -> None:
    vectorised, looped = _attrs(spec), _attrs(copy.deepcopy(spec))
    water_fill(vectorised, np.array(total), ALWAYS)
    water_fill_loop(looped, np.array(total), ALWAYS)
    for a, b in zip(vectorised, looped, strict=True):
        np.testing.assert_array_equal(a.deserved, b.deserved, err_msg=a.name)
        assert a.share == b.share or (np.isnan(a.share) and np.isnan(b.share)), a.name
        assert a.deserved is not b.deserved and all(a.deserved is not c.deserved for c in vectorised if c is not a)


finite = st.sampled_from([0.0, 0.05, 0.3, 1.0, 3.0, 7.5, 1000.0, 1e10, 3.3e12, 137438953472000.0])
finite_queues = st.lists(st.tuples(st.integers(0, 5), *[st.lists(finite, min_size=DIMS, max_size=DIMS)] * 4),
                         min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(spec=finite_queues, total=st.lists(finite, min_size=DIMS, max_size=DIMS))
@example(spec=[(1, [1e10] * 4, [3.0, 3.0, 0.0, 0.0], [0.0] * 4, [1.0] * 4),
               (2, [7.5, 1e10, 1e10, 1.0], [1000.0, 7.5, 1.0, 0.3], [0.3, 0.0, 0.0, 0.0], [0.0] * 4),
               (3, [1e10] * 4, [1e10, 1e10, 1e10, 1e10], [0.0] * 4, [3.0, 0.0, 0.0, 0.0])],
         total=[1000.0, 3.3e12, 7.5, 3.0])
def test_water_fill_on_floats_equals_the_loop_and_the_arrays_bit_for_bit(
        spec: list[tuple[int, list[float], list[float], list[float], list[float]]], total: list[float]) -> None:
    """Finite, non-negative inputs (every session's): the Python-float rounds are taken and give the
    loop's and the arrays' floats, byte for byte."""
    from member_agent.scheduler.plugins.water_fill import _fill_arrays, _fill_floats

    floats, arrays, looped = _attrs(spec), _attrs(copy.deepcopy(spec)), _attrs(copy.deepcopy(spec))
    assert _fill_floats(floats, np.array(total), ALWAYS)
    _fill_arrays(arrays, np.array(total), ALWAYS)
    water_fill_loop(looped, np.array(total), ALWAYS)
    for a, b, c in zip(floats, arrays, looped, strict=True):
        assert a.deserved.tobytes() == b.deserved.tobytes() == c.deserved.tobytes(), a.name
        assert a.share == b.share == c.share and type(a.share) is float, a.name


def test_inputs_outside_the_float_domain_take_the_arrays() -> None:
    from member_agent.scheduler.plugins.water_fill import _fill_floats

    for odd in (np.inf, np.nan, -0.0, -1.0):
        attrs = _attrs([(1, [odd, 1.0, 1.0, 1.0], [1.0] * 4, [0.0] * 4, [0.0] * 4)])
        before = attrs[0].deserved
        assert not _fill_floats(attrs, np.array([4.0] * 4), ALWAYS) and attrs[0].deserved is before
