"""Per-session indexes over node labels and taints, so label/taint work is per distinct value.

Predicates and scorers that look at labels and taints (node selector, node affinity, taint
toleration) depend only on a pod's *placement key* — its node selector, node affinity and
tolerations — not on its resource request. Jobs with different requests but the same
placement (the common case: every job its own template, a handful of pools) must not redo
a Python pass over every node. This module gives them:

* :func:`placement_key`: the part of a task shape that label/taint checks depend on;
* :class:`NodeIndex`: label columns as integer codes (one pass over the nodes per label
  key, then numpy comparisons), requirement masks evaluated once per distinct label value,
  and nodes grouped by their taint list (few distinct lists even in large clusters).

Built lazily on first use by :func:`node_index` and kept on the session. The label columns and
taint groups, functions of the nodes' labels and taints alone, are shared with the index of the
next session over the same label and taint tuples (:func:`_statics`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Hashable

import numpy as np

from member_agent.scheduler.framework.snapshot import NodeTable, Taint
from policies.k8s.node_selector import NodeSelectorRequirement

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session
    from member_agent.scheduler.framework.snapshot import TaskSpec

#: ``matches(requirement, label value or None) -> bool``
Matcher = Callable[[NodeSelectorRequirement, "str | None"], bool]


def placement_key(spec: TaskSpec) -> Hashable:
    """What label and taint checks of a task depend on (hashable; equal for one template)."""
    return (tuple(sorted(spec.node_selector.items())), spec.affinity, spec.tolerations)


Column = tuple[np.ndarray, list[str | None], dict[str | None, int]]
TaintGroups = list[tuple[tuple[Taint, ...], np.ndarray]]


class _Statics:
    """What an index derives from the nodes' labels and taints only, filled as sessions ask."""

    __slots__ = ("labels", "taints", "columns", "taint_groups")

    def __init__(self, nodes: NodeTable) -> None:
        self.labels, self.taints = nodes.labels, nodes.taints  # held: their ids stay their own
        self.columns: dict[str, Column] = {}
        self.taint_groups: TaintGroups | None = None


_LAST: _Statics | None = None


def _statics(nodes: NodeTable) -> _Statics:
    """The last node table's statics while a table has the same label and taint tuples (``is``): the
    scheduler cache hands every snapshot those tuples until a Node changes (its node arrays are
    copied, the rest shared), and each session built the columns and taint groups again (a Python
    pass over every node). The arrays handed out are never written."""
    global _LAST
    last = _LAST
    if last is None or last.labels is not nodes.labels or last.taints is not nodes.taints:
        last = _LAST = _Statics(nodes)
    return last


class NodeIndex:
    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        self._statics = _statics(nodes)
        self._columns = self._statics.columns
        self._placements: dict[int, Hashable] = {}

    def placement(self, spec: TaskSpec) -> Hashable:
        """:func:`placement_key`, memoised per task shape."""
        key = self._placements.get(spec.shape)
        if key is None:
            key = self._placements[spec.shape] = placement_key(spec)
        return key

    def column(self, key: str) -> Column:
        """Per node the code of its value for label ``key`` (None = label absent), the values, and value → code."""
        found = self._columns.get(key)
        if found is None:
            codes_of: dict[str | None, int] = {}
            codes = np.fromiter(
                (codes_of.setdefault(labels.get(key), len(codes_of)) for labels in self.nodes.labels),
                np.int32, len(self.nodes),
            )
            codes.setflags(write=False)  # shared with later sessions' indexes
            values = list(codes_of)
            found = self._columns[key] = (codes, values, codes_of)
        return found

    def label_equals(self, key: str, value: str) -> np.ndarray:
        codes, _values, codes_of = self.column(key)
        code = codes_of.get(value)
        if code is None:
            return np.zeros(len(self.nodes), dtype=bool)
        rows: np.ndarray = codes == code
        return rows

    def requirement(self, req: NodeSelectorRequirement, matches: Matcher) -> np.ndarray:
        """Rows whose label ``req.key`` satisfies ``req`` (``matches`` evaluated once per distinct value)."""
        codes, values, _ = self.column(req.key)
        verdict = np.fromiter((matches(req, value) for value in values), bool, len(values))
        rows: np.ndarray = verdict[codes]
        return rows

    def taint_groups(self) -> TaintGroups:
        """Nodes with at least one taint, grouped by their taint list (rows ascending)."""
        statics = self._statics
        if statics.taint_groups is None:
            rows_of: dict[tuple[Taint, ...], list[int]] = {}
            for row, taints in enumerate(self.nodes.taints):
                if taints:
                    rows_of.setdefault(taints, []).append(row)
            groups = statics.taint_groups = [(taints, np.array(rows, dtype=np.int64)) for taints, rows in rows_of.items()]
            for _taints, rows in groups:
                rows.setflags(write=False)  # shared with later sessions' indexes
        return statics.taint_groups


def node_index(ssn: Session) -> NodeIndex:
    index: NodeIndex | None = ssn.node_index
    if index is None or index.nodes is not ssn.nodes:
        index = ssn.node_index = NodeIndex(ssn.nodes)
    return index
