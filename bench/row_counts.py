"""Counting the node-search work of a session: rows visited and shape-rows evaluated.

CPU time on the shared 2-core machine moves with the load; these counts do not, so their
growth against nodes shows how the work scales (issue 14 §6). The counters wrap two methods
of the node search for the duration of a ``with`` block (a benchmark process only; the pure
core is unchanged) and add a few per cent of CPU time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from member_agent.scheduler.framework import node_search


@dataclass
class RowCounts:
    searches: int = 0  #: NodeSearch.feasible calls (one per task tried)
    visited: int = 0  #: rows the searches visited (what Volcano runs predicates on)
    evaluated: int = 0  #: shape-rows ShapeCache evaluated (fit, predicates, scores)

    def line(self) -> str:
        per = self.visited / self.searches if self.searches else 0.0
        return (f"  rows: {self.searches} searches, {self.visited / 1e6:.2f} M visited ({per:,.0f} per search), "
                f"{self.evaluated / 1e6:.2f} M shape-rows evaluated")


@contextmanager
def counting() -> Iterator[RowCounts]:
    counts = RowCounts()
    evaluate, feasible = node_search.ShapeCache._evaluate, node_search.NodeSearch.feasible

    def counted_evaluate(self: Any, ssn: Any, task: Any, rows: Any) -> None:
        counts.evaluated += len(rows)
        evaluate(self, ssn, task, rows)

    def counted_feasible(self: Any, task: Any, check_resources: bool = True, plan: bool = False) -> Any:
        n, before = len(self.ssn.node_names), self.start
        result = feasible(self, task, check_resources, plan)
        counts.searches += 1
        # The cursor moves past the visited rows; a search that visits every row leaves it.
        counts.visited += ((self.start - before) % n or n) if n else 0
        return result

    node_search.ShapeCache._evaluate = counted_evaluate  # type: ignore[method-assign]
    node_search.NodeSearch.feasible = counted_feasible  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        node_search.ShapeCache._evaluate = evaluate  # type: ignore[method-assign]
        node_search.NodeSearch.feasible = feasible  # type: ignore[method-assign]
