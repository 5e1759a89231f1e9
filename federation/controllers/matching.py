"""Which (Cluster)PropagationPolicy governs a federated Job (Karmada's detector rules, §1.1).

A policy matches when one of its ``resourceSelectors`` selects the Job: ``apiVersion`` and
``kind`` equal, ``namespace`` equal when set, ``name`` equal when set, otherwise the
``labelSelector`` (when set) matches the Job's labels. The winner is chosen in this order:

1. a PropagationPolicy in the Job's namespace before any ClusterPropagationPolicy;
2. higher explicit ``spec.priority``;
3. the more precise selector (by name, then by labelSelector, then apiVersion+kind only);
4. the alphabetically smaller policy name.

Two or more policies tied on 1–3 are a *conflict*: the first by name still wins (so the
outcome is deterministic), and the caller reports the conflict (RB condition + Event).
Policies being deleted are ignored; CPPs never select objects in Karmada's reserved
namespaces. Pure: works on wire dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.k8s import label_selector

Obj = Mapping[str, Any]

#: implicit priorities (Karmada: MatchName > MatchLabelSelector > MatchAll)
MATCH_ALL, MATCH_LABELS, MATCH_NAME = 1, 2, 3
RESERVED_NAMESPACES = ("karmada-system", "karmada-cluster")
RESERVED_PREFIX = "karmada-es-"


def selector_precision(selector: Mapping[str, Any], obj: Obj, policy_namespace: str | None) -> int:
    """0 when ``selector`` does not select ``obj``, else MATCH_ALL/LABELS/NAME."""
    meta = obj.get("metadata") or {}
    if selector.get("apiVersion") != obj.get("apiVersion") or selector.get("kind") != obj.get("kind"):
        return 0
    namespace = selector.get("namespace") or policy_namespace
    if namespace and namespace != (meta.get("namespace") or ""):
        return 0
    if selector.get("name"):
        return MATCH_NAME if selector["name"] == meta.get("name") else 0
    if selector.get("labelSelector") is not None:
        return MATCH_LABELS if label_selector.selects(selector["labelSelector"], meta.get("labels") or {}) else 0
    return MATCH_ALL


def policy_precision(policy: Obj, obj: Obj) -> int:
    """The best precision among the policy's selectors that select ``obj`` (0: no match)."""
    meta = policy.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return 0
    namespaced = policy.get("kind") == "PropagationPolicy"
    target_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if namespaced and (meta.get("namespace") or "") != target_ns:
        return 0
    if not namespaced and (target_ns in RESERVED_NAMESPACES or target_ns.startswith(RESERVED_PREFIX)):
        return 0
    policy_ns = meta.get("namespace") if namespaced else None
    selectors = (policy.get("spec") or {}).get("resourceSelectors") or []
    return max((selector_precision(s, obj, policy_ns) for s in selectors), default=0)


def policy_ref(policy: Obj) -> str:
    meta = policy.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{policy.get('kind', 'Policy')} {ns + '/' if ns else ''}{meta.get('name', '')}"


@dataclass(frozen=True)
class Match:
    """The governing policy (None: no policy selects the object) and any tied rivals."""

    policy: Obj | None
    conflicts: tuple[Obj, ...] = field(default=())

    @property
    def ref(self) -> str:
        return policy_ref(self.policy) if self.policy is not None else ""

    def conflict_message(self) -> str:
        if not self.conflicts or self.policy is None:
            return ""
        rivals = ", ".join(policy_ref(p) for p in self.conflicts)
        return (f"{len(self.conflicts) + 1} policies select this object with the same priority and precision: "
                f"{self.ref} (chosen: first by name), {rivals}")


def _rank(policy: Obj, precision: int) -> tuple[int, int, int]:
    """Sort key: lower is better (PP first, priority desc, precision desc)."""
    priority = int((policy.get("spec") or {}).get("priority") or 0)
    return (0 if policy.get("kind") == "PropagationPolicy" else 1, -priority, -precision)


def match_policy(obj: Obj, policies: Iterable[Obj]) -> Match:
    """The policy governing ``obj`` among ``policies`` (PPs and CPPs mixed)."""
    ranked: list[tuple[tuple[int, int, int], str, Obj]] = []
    for policy in policies:
        precision = policy_precision(policy, obj)
        if precision:
            ranked.append((_rank(policy, precision), (policy.get("metadata") or {}).get("name", ""), policy))
    if not ranked:
        return Match(None)
    ranked.sort(key=lambda r: (r[0], r[1]))
    best = ranked[0][0]
    rivals = tuple(p for rank, _, p in ranked[1:] if rank == best)
    return Match(ranked[0][2], rivals)
