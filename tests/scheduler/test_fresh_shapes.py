"""A fresh shape's first evaluation (one shape per job): the hints and shortcuts of round 10 change
the cost only, never a decision (counted, not timed).

A fresh shape's first chunk is sized with the feasible density its placement's last fresh shape found
(``node_search.DENSITY_HINTS``): sessions with and without the hint decide the same, and with it the
fresh shapes of a placement seen before evaluate their rows in fewer passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import node_search, shape_cache
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import SessionOptions
from tests.scheduler.test_node_search_bound import CONF, job, nodes
from tests.scheduler.test_search_shortcuts import _decisions

OPTIONS = SessionOptions(percentage_nodes_to_find=5, minimum_feasible_nodes=10)


def per_job_pools() -> list[dict[str, Any]]:
    """800 nodes in 4 pools, 48 jobs of 2-13 pods each with its own cpu request, most pinned to a pool
    (a fresh shape per job whose windows sweep its pool; later jobs find nodes filled)."""
    objects = nodes(800, pools=4)
    for j in range(48):
        objects += job(f"j{j:02d}", 2 + j % 12, cpu=f"{3000 + 91 * j}m", gpus=j % 3,
                       pool=f"p{j % 4}" if j % 5 else None)
    return objects


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each vectorised evaluation (of more than ``SMALL_ROWS`` rows), in order."""
    sizes: list[int] = []
    evaluate = shape_cache.ShapeCache._evaluate

    def spy(self: Any, ssn: Any, task: Any, rows: Any) -> None:
        sizes.append(len(rows))
        evaluate(self, ssn, task, rows)

    monkeypatch.setattr(shape_cache.ShapeCache, "_evaluate", spy)
    return sizes


def test_density_hints_decide_as_without_and_save_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_search, "MIN_CHUNK", 16)  # chunks sized by the density at this scale
    passes = _count_passes(monkeypatch)
    hinted = run_cycle(build_snapshot(per_job_pools()), CONF, FixedClock(), options=OPTIONS)
    with_hints = list(passes)
    passes.clear()
    monkeypatch.setattr(node_search, "DENSITY_HINTS", False)
    plain = run_cycle(build_snapshot(per_job_pools()), CONF, FixedClock(), options=OPTIONS)
    assert len(hinted.bindings) > 300
    assert _decisions(hinted) == _decisions(plain)
    assert len(with_hints) < 0.85 * len(passes)  # 257 against 325: most shapes in one pass, not two or three
