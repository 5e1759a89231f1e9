"""The partition checks on synthetic samples: what counts as running twice and as by halves."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.partition_samples import analyse, report


def _s(t: float, running: dict[str, int] | None, generation: int = 1, clusters: int = 2) -> dict[str, Any]:
    if running is None:
        return {"t": t, "ok": False}
    return {"t": t, "ok": True, "works": {"default.j": {"generation": generation, "clusters": clusters,
                                                         "running": running, "fenced": None}}}


CASES = [
    # a gang on both clusters; b stops at 3, a is torn down at 9: by halves for 6 s, never twice
    ("halves", {"a": [_s(0, {"1": 2}), _s(9, {}), _s(12, {"2": 4}, 2, 1)],
                "b": [_s(0, {"1": 2}), _s(3, {}), _s(12, {})]}, 0, 6.0),
    # split brain: b keeps generation 1 (alone: by halves) while a runs generation 2 (one sample sees both)
    ("twice", {"a": [_s(0, {"1": 2}), _s(5, {"2": 4}, 2, 1)],
               "b": [_s(0, {"1": 2}), _s(7, {})]}, 1, 2.0),
    # an agent that does not answer runs nothing (a killed sim agent)
    ("killed", {"a": [_s(0, {"1": 2}), _s(4, {})], "b": [_s(0, {"1": 2}), _s(1, None), _s(4, None)]}, 0, 3.0),
]


@pytest.mark.parametrize(("name", "samples", "twice", "halves"), CASES, ids=[c[0] for c in CASES])
def test_analyse(name: str, samples: dict[str, list[dict[str, Any]]], twice: int, halves: float) -> None:
    found = analyse(samples)
    assert len(found.double_runs) == twice, report(found)
    assert found.longest_halves() == pytest.approx(halves), report(found)
