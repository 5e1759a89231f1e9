"""``binpack``: prefer the node that will be fullest (volcano.md §6.4).

For every resource the task requests that has a weight (cpu, memory and the
``binpack.resources`` list), ``(used + request) * weight / allocatable``; a node where
any of them would overflow scores 0. Score = weighted mean × 100 × ``binpack.weight``.
``used`` is the node's Used (pipelined tasks excluded). Vectorised over node rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.rows import selector, take
from member_agent.scheduler.framework.session import Session

NAME = "binpack"
ARGUMENTS = (
    Argument("binpack.weight", int, 1),
    Argument("binpack.cpu", int, 1),
    Argument("binpack.memory", int, 1),
    Argument("binpack.resources", str, ""),
)
PREFIXED = {"binpack.resources.": int}
MAX_NODE_SCORE = 100.0
#: Requests whose counted dims :meth:`BinpackPlugin._terms` keeps (a session has one per task shape or fewer).
MAX_TERMS = 4096


class BinpackPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.weight = int(args["binpack.weight"])
        self.resource_weights: dict[str, int] = {
            "cpu": int(args["binpack.cpu"]) if args["binpack.cpu"] >= 0 else 1,
            "memory": int(args["binpack.memory"]) if args["binpack.memory"] >= 0 else 1,
        }
        for name in (n.strip() for n in str(args["binpack.resources"]).split(",")):
            if not name:
                continue
            weight = int(args.get(f"binpack.resources.{name}", 1))
            self.resource_weights[name] = weight if weight >= 0 else 1

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.weights = np.zeros(len(ssn.dims))
        self.configured = np.zeros(len(ssn.dims), dtype=bool)
        for name, weight in self.resource_weights.items():
            i = ssn.dims.index.get(name)
            if i is not None:
                self.weights[i] = weight
                self.configured[i] = True
        self.weights_list = self.weights.tolist()
        self.terms: dict[tuple[float, ...], tuple[tuple[tuple[int, float, float], ...], float]] = {}
        self.configured_list = self.configured.tolist()
        if self.weight != 0:
            ssn.add(Point.NODE_ORDER, NAME, self._score, row=self._score_row, by_resources=True)

    def _score(self, task: TaskInfo, rows: np.ndarray) -> Any:
        req = task.spec.request
        weights = np.where((req >= 0.1) & self.configured, self.weights, 0.0)
        counted = (req >= 0.1) & self.configured
        weight_sum = weights.sum()
        if not counted.any() or weight_sum == 0:
            return np.zeros(len(rows))
        # Only the counted dims with a non-zero weight contribute: work on those columns alone.
        cols = np.flatnonzero(weights != 0)
        sel = selector(rows)  # a contiguous span is read as views
        alloc = take(self.ssn.node_allocatable, sel)[:, cols]
        after = take(self.ssn.used, sel)[:, cols] + req[cols]
        usable = alloc != 0
        parts = np.where(usable, after * weights[cols] / np.where(usable, alloc, 1.0), 0.0)
        score = parts.sum(axis=1) * (MAX_NODE_SCORE * self.weight / weight_sum)
        score[(usable & (after > alloc)).any(axis=1)] = 0.0
        return score

    def _score_row(self, task: TaskInfo, row: int) -> float:
        """The same formula for one node, in scalar arithmetic, over the task's counted dims
        (:meth:`_terms`)."""
        terms, factor = self._terms(task.spec.request_list)
        if factor == 0.0:
            return 0.0
        total = 0.0
        alloc = self.ssn.node_allocatable[row].tolist()
        used = self.ssn.used[row].tolist()
        for d, request, weight in terms:
            if alloc[d] == 0:
                continue
            after = used[d] + request
            if after > alloc[d]:
                return 0.0
            total += after * weight / alloc[d]
        return total * factor

    def _terms(self, request: tuple[float, ...]) -> tuple[tuple[tuple[int, float, float], ...], float]:
        """A request's counted dims with a weight (dim, request, weight) and the score's factor
        ``100 * binpack.weight / sum of the counted weights`` (0.0: the score is 0). They depend on
        the request alone: kept per request instead of walking every dim for every row."""
        found = self.terms.get(request)
        if found is None:
            weight_sum = 0.0
            terms = []
            for d, value in enumerate(request):
                if value < 0.1 or not self.configured_list[d]:
                    continue
                weight = self.weights_list[d]
                weight_sum += weight
                if weight != 0:
                    terms.append((d, value, weight))
            factor = MAX_NODE_SCORE * self.weight / weight_sum if weight_sum != 0 else 0.0
            if len(self.terms) >= MAX_TERMS:
                self.terms.clear()
            found = self.terms[request] = (tuple(terms), factor)
        return found

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> BinpackPlugin:
    return BinpackPlugin(args)
