"""The replay kubelet's pod ends (``simulator/kubelet.PodEnds``): in end order, and a pod bound
again under the same name before its end runs anew (only its latest binding ends it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulator.kubelet import PodEnds


def test_ends_come_in_time_order_up_to_the_bound() -> None:
    ends = PodEnds()
    ends.start("a", "a-w-0", 30.0)
    ends.start("b", "b-w-0", 10.0)
    ends.start("c", "c-w-0", 20.0)
    assert ends.next() == 10.0
    assert list(ends.due(20.0)) == [("b", "b-w-0"), ("c", "c-w-0")]
    assert ends.next() == 30.0
    assert list(ends.due(29.0)) == []
    assert list(ends.due(30.0)) == [("a", "a-w-0")]
    assert ends.next() == float("inf")


def test_a_pod_bound_again_runs_anew() -> None:
    ends = PodEnds()
    ends.start("a", "a-w-0", 10.0)
    ends.start("a", "a-w-0", 25.0)  # evicted and bound again before its first end
    assert list(ends.due(20.0)) == []
    assert list(ends.due(25.0)) == [("a", "a-w-0")]


@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 100)), max_size=30), st.floats(0, 100))
def test_due_equals_the_latest_binding_of_each_pod(bindings: list[tuple[int, float]], until: float) -> None:
    ends = PodEnds()
    latest: dict[str, tuple[float, int]] = {}  # pod -> (its latest end, binding order)
    for seq, (pod, at) in enumerate(bindings):
        ends.start("j", f"p{pod}", at)
        latest[f"p{pod}"] = (at, seq)
    expected = sorted((end, name) for name, end in latest.items() if end[0] <= until)
    assert [name for _job, name in ends.due(until)] == [name for _end, name in expected]
