"""The HyperNode tree of one cluster: network domains as node-row index arrays, per tier.

Built once per set of (HyperNode manifests, node names and labels), not per session or pod
(:func:`topology_of` keeps the last few). Each HyperNode becomes an index ``h`` with its tier,
parent and the sorted node rows under it (its own node members and those of its descendants);
per tier, ``domain_of[tier]`` gives for every node row the HyperNode of that tier holding it
(−1: none). A virtual HyperNode, ``<cluster-top-hypernode>``, sits one tier above the highest
real tier, parents every parentless HyperNode and holds every node (volcano.md §2.2 step 3).

What a single manifest cannot show is reported as a problem of the topology, not refused:
a cycle between HyperNodes (the edge closing it is dropped), a HyperNode claimed by two
parents (the first by name keeps it), a member HyperNode whose tier is not below its parent's,
a member naming a HyperNode that does not exist, and a node claimed by two HyperNodes of one
tier (the first by name keeps it in that tier's domains).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from member_agent.scheduler.framework.memo import remember
from policies.k8s import label_selector

TOP = "<cluster-top-hypernode>"


@dataclass
class HyperNodeTree:
    names: list[str]  # index -> name; the last one is TOP
    tiers: np.ndarray  # (H,) int
    tier_names: list[str]
    parent: np.ndarray  # (H,) int, -1 for TOP
    rows: list[np.ndarray]  # sorted node rows under each HyperNode
    domain_of: dict[int, np.ndarray]  # tier -> (N,) HyperNode index per node row, -1 none
    by_tier: dict[int, np.ndarray]  # tier -> HyperNode indices of that tier (with node rows)
    tier_list: list[int]  # real tiers ascending, then the top tier
    problems: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    @property
    def top(self) -> int:
        return len(self.names) - 1

    @property
    def top_tier(self) -> int:
        return int(self.tiers[-1])

    @property
    def real(self) -> bool:
        """Whether any real HyperNode holds a node (otherwise the cluster is one domain)."""
        return len(self.tier_list) > 1

    def tier_of_name(self, name: str) -> int | None:
        for h, tier_name in enumerate(self.tier_names):
            if tier_name == name:
                return int(self.tiers[h])
        return None

    def ancestors(self, h: int) -> list[int]:
        """``h`` and its ancestors up to TOP."""
        chain = [h]
        while self.parent[chain[-1]] >= 0:
            chain.append(int(self.parent[chain[-1]]))
        return chain

    def lca_of_rows(self, rows: Iterable[int]) -> int:
        """The lowest HyperNode holding every row (TOP when they share none)."""
        rows = list(rows)
        if not rows:
            return self.top
        for tier in self.tier_list[:-1]:
            doms = self.domain_of[tier][rows]
            if doms[0] >= 0 and bool((doms == doms[0]).all()):
                return int(doms[0])
        return self.top

    def highest_allowed(self, h: int, tier: int) -> int:
        """The highest ancestor of ``h`` (itself included) whose tier is at most ``tier``."""
        best = h
        for a in self.ancestors(h):
            if self.tiers[a] <= tier:
                best = a
        return best


def _select(selector: Mapping[str, Any], names: Sequence[str], labels: Sequence[Mapping[str, str]] | None,
            index: Mapping[str, int]) -> list[int]:
    """Indices of ``names`` a member selector picks (Go's unanchored ``regexp.MatchString``)."""
    exact = selector.get("exactMatch")
    if exact is not None:
        found = index.get(str(exact.get("name") or ""))
        return [] if found is None else [found]
    regex = selector.get("regexMatch")
    if regex is not None:
        pattern = re.compile(str(regex.get("pattern") or ""))
        return [i for i, name in enumerate(names) if pattern.search(name)]
    match = selector.get("labelMatch")
    if match is not None and labels is not None:
        return [i for i, node_labels in enumerate(labels) if label_selector.selects(match, node_labels)]
    return []


def build_tree(hypernodes: Iterable[Mapping[str, Any]], node_names: Sequence[str],
               node_labels: Sequence[Mapping[str, str]]) -> HyperNodeTree:
    """The tree of ``hypernodes`` (wire dicts, valid each on its own) over the node rows."""
    specs = sorted(((str((h.get("metadata") or {}).get("name")), h.get("spec") or {}) for h in hypernodes),
                   key=lambda item: item[0])
    problems: list[str] = []
    names = [name for name, _ in specs]
    index = {name: i for i, name in enumerate(names)}
    node_index = {name: i for i, name in enumerate(node_names)}
    tiers = [int(spec.get("tier") or 0) for _, spec in specs]
    parent = [-1] * len(specs)
    own_rows: list[list[int]] = []
    children: list[list[int]] = [[] for _ in specs]
    edges: list[tuple[int, int, int]] = []  # (parent, member index, child)
    for h, (name, spec) in enumerate(specs):
        mine: list[int] = []
        for m, member in enumerate(spec.get("members") or ()):
            selector = member.get("selector") or {}
            if member.get("type") == "HyperNode":
                if "labelMatch" in selector:
                    problems.append(f"HyperNode {name}: spec.members[{m}]: labelMatch selects nodes only; ignored")
                    continue
                picked = _select(selector, names, None, index)
                if not picked and "exactMatch" in selector:
                    problems.append(f"HyperNode {name}: spec.members[{m}]: HyperNode "
                                    f"{(selector.get('exactMatch') or {}).get('name')} does not exist")
                edges.extend((h, m, child) for child in picked)
            else:
                mine.extend(_select(selector, node_names, node_labels, node_index))
        own_rows.append(sorted(set(mine)))
    cyclic = _report_cycles(names, edges, problems)
    for h, _m, child in edges:
        if (h, child) not in cyclic:
            _adopt(h, child, names, tiers, parent, children, problems)
    rows = _collect_rows(own_rows, children, parent)
    return _finish(names, tiers, [str(spec.get("tierName") or "") for _, spec in specs], parent, rows,
                   len(node_names), problems, node_names)


def _report_cycles(names: list[str], edges: list[tuple[int, int, int]], problems: list[str]) -> set[tuple[int, int]]:
    """Every membership edge on a cycle (reported once per cycle, each such edge ignored)."""
    out: dict[int, list[int]] = {}
    for h, _m, child in edges:
        out.setdefault(h, []).append(child)
    state: dict[int, int] = {}  # 1: on the DFS path, 2: done
    on_cycle: set[tuple[int, int]] = set()

    def visit(h: int, path: list[int]) -> None:
        state[h] = 1
        path.append(h)
        for child in out.get(h, ()):
            if state.get(child) == 1:
                loop = path[path.index(child):]
                problems.append("HyperNode cycle: " + " -> ".join(names[x] for x in [*loop, child])
                                + "; these memberships are ignored")
                on_cycle.update(zip(loop, [*loop[1:], child], strict=True))
            elif child not in state:
                visit(child, path)
        path.pop()
        state[h] = 2

    for h in range(len(names)):
        if h not in state:
            visit(h, [])
    return on_cycle


def _adopt(h: int, child: int, names: list[str], tiers: list[int], parent: list[int],
           children: list[list[int]], problems: list[str]) -> None:
    """Make ``child`` a member of ``h`` unless that closes a cycle, gives it a second parent or
    puts it at or above its parent's tier (each reported)."""
    chain = [h]
    while parent[chain[-1]] >= 0:
        chain.append(parent[chain[-1]])
    if child in chain:
        loop = " -> ".join(names[x] for x in reversed(chain[:chain.index(child) + 1]))
        problems.append(f"HyperNode {names[h]}: cycle {names[child]} -> {loop}: the member {names[child]} is ignored")
    elif parent[child] >= 0:
        problems.append(f"HyperNode {names[child]} is a member of both {names[parent[child]]} and "
                        f"{names[h]}; kept under {names[parent[child]]}")
    elif tiers[child] >= tiers[h]:
        problems.append(f"HyperNode {names[h]}: member HyperNode {names[child]} has tier {tiers[child]}, "
                        f"not below {tiers[h]}; ignored")
    else:
        parent[child] = h
        children[h].append(child)


def _collect_rows(own_rows: list[list[int]], children: list[list[int]], parent: list[int]) -> list[list[int]]:
    memo: dict[int, list[int]] = {}

    def rows_of(h: int) -> list[int]:
        found = memo.get(h)
        if found is None:
            acc = set(own_rows[h])
            for c in children[h]:
                acc.update(rows_of(c))
            found = memo[h] = sorted(acc)
        return found

    return [rows_of(h) for h in range(len(own_rows))]


def _finish(names: list[str], tiers: list[int], tier_names: list[str], parent: list[int], rows: list[list[int]],
            n: int, problems: list[str], node_names: Sequence[str]) -> HyperNodeTree:
    real_tiers = sorted({t for t, r in zip(tiers, rows, strict=True) if r})
    top_tier = (max(tiers) + 1) if tiers else 1
    domain_of: dict[int, np.ndarray] = {}
    by_tier: dict[int, np.ndarray] = {}
    for tier in real_tiers:
        dom = np.full(n, -1, dtype=np.int64)
        members = [h for h in range(len(names)) if tiers[h] == tier and rows[h]]
        for h in members:
            arr = np.asarray(rows[h], dtype=np.int64)
            clash = arr[dom[arr] >= 0]
            for row in clash[:3].tolist():
                problems.append(f"node {node_names[row]} is claimed by HyperNodes {names[int(dom[row])]} and "
                                f"{names[h]} of tier {tier}; kept in {names[int(dom[row])]}")
            if len(clash) > 3:
                problems.append(f"... and {len(clash) - 3} more nodes of {names[h]} claimed twice in tier {tier}")
            free = arr[dom[arr] < 0]
            dom[free] = h
        domain_of[tier] = dom
        by_tier[tier] = np.asarray(members, dtype=np.int64)
    top = len(names)
    all_names = [*names, TOP]
    parents = np.asarray([p if p >= 0 else top for p in parent] + [-1], dtype=np.int64)
    row_arrays = [np.asarray(r, dtype=np.int64) for r in rows] + [np.arange(n, dtype=np.int64)]
    tree = HyperNodeTree(all_names, np.asarray([*tiers, top_tier], dtype=np.int64), [*tier_names, ""], parents,
                         row_arrays, domain_of, by_tier, [*real_tiers, top_tier], problems,
                         {name: i for i, name in enumerate(all_names)})
    domain_of[top_tier] = np.full(n, top, dtype=np.int64)
    by_tier[top_tier] = np.asarray([top], dtype=np.int64)
    return tree


_MEMO: dict[tuple[str, tuple[str, ...]], HyperNodeTree] = {}


def topology_of(hypernodes: Sequence[Mapping[str, Any]], node_names: tuple[str, ...],
                node_labels: Sequence[Mapping[str, str]]) -> HyperNodeTree | None:
    """The tree for these HyperNodes over these nodes (None without HyperNodes), memoised."""
    if not hypernodes:
        return None
    text = json.dumps([{"metadata": {"name": (h.get("metadata") or {}).get("name")}, "spec": h.get("spec")}
                       for h in hypernodes], sort_keys=True)
    labelled = any("labelMatch" in json.dumps(h.get("spec")) for h in hypernodes)
    key = (text + (json.dumps([dict(lab) for lab in node_labels], sort_keys=True) if labelled else ""), node_names)
    found = _MEMO.get(key)
    if found is None:
        found = remember(_MEMO, key, build_tree(hypernodes, node_names, node_labels), 4)
    return found
