"""Karmada's printer columns for ``kubectl get pp/cpp/rb``, computed from the objects.

- PropagationPolicy / ClusterPropagationPolicy: upstream's CONFLICT-RESOLUTION and PRIORITY,
  plus, with ``-o wide``, the placement type, the clusters it may use and the static weights.
- ResourceBinding: FULLYAPPLIED is read from the Works of the binding's clusters (Karmada's
  binding controller derives its condition the same way), not from a condition Caldera never
  writes; ``-o wide`` adds the clusters and their replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policies.models.karmada_work import PLACEMENT_GENERATION, execution_namespace

Obj = dict[str, Any]
Lookup = Callable[[str, str, str], "Obj | None"]
Column = tuple[str, str, int, Callable[[Obj, Lookup], Any]]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _placement(policy: Obj) -> Obj:
    return _dict(_dict(policy.get("spec")).get("placement"))


def placement_type(policy: Obj, _lookup: Lookup | None = None) -> str:
    """``Duplicated`` (Karmada's default), or ``Divided/Weighted`` / ``Divided/Aggregated``."""
    scheduling = _dict(_placement(policy).get("replicaScheduling"))
    kind = str(scheduling.get("replicaSchedulingType") or "Duplicated")
    preference = scheduling.get("replicaDivisionPreference")
    return f"{kind}/{preference}" if kind == "Divided" and preference else kind


def policy_clusters(policy: Obj, _lookup: Lookup | None = None) -> str:
    """The clusters the placement may use: names, a label selector, or ordered affinity groups."""
    placement = _placement(policy)
    groups = _list(placement.get("clusterAffinities"))
    if groups:
        return " > ".join(str(_dict(g).get("affinityName") or "?") + "(" + _affinity_text(_dict(g)) + ")"
                          for g in groups)
    affinity = _dict(placement.get("clusterAffinity"))
    return _affinity_text(affinity) if affinity else "<all>"


def _affinity_text(affinity: Obj) -> str:
    parts = [",".join(str(n) for n in _list(affinity.get("clusterNames")))]
    selector = _dict(affinity.get("labelSelector"))
    labels = [f"{k}={v}" for k, v in sorted(_dict(selector.get("matchLabels")).items())]
    labels += [f"{_dict(e).get('key')} {_dict(e).get('operator')}" for e in _list(selector.get("matchExpressions"))]
    if labels:
        parts.append(",".join(labels))
    excluded = _list(affinity.get("exclude"))
    if excluded:
        parts.append("!" + ",!".join(str(n) for n in excluded))
    return ";".join(p for p in parts if p) or "<all>"


def policy_weights(policy: Obj, _lookup: Lookup | None = None) -> str:
    """Static weights as ``cluster=weight``, ``dynamic:AvailableReplicas``, or ``<none>``."""
    preference = _dict(_dict(_placement(policy).get("replicaScheduling")).get("weightPreference"))
    if preference.get("dynamicWeight"):
        return f"dynamic:{preference['dynamicWeight']}"
    entries = []
    for item in _list(preference.get("staticWeightList")):
        target = _dict(_dict(item).get("targetCluster"))
        names = ",".join(str(n) for n in _list(target.get("clusterNames"))) or "<selector>"
        entries.append(f"{names}={_dict(item).get('weight', '')}")
    return ",".join(entries) or "<none>"


POLICY_COLUMNS: list[Column] = [
    ("CONFLICT-RESOLUTION", "string", 0, lambda o, _: _dict(o.get("spec")).get("conflictResolution") or "Abort"),
    ("PRIORITY", "integer", 0, lambda o, _: int(_dict(o.get("spec")).get("priority") or 0)),
    ("PLACEMENT", "string", 1, placement_type),
    ("CLUSTERS", "string", 1, policy_clusters),
    ("WEIGHTS", "string", 1, policy_weights),
]


def _targets(rb: Obj) -> list[Obj]:
    return [c for c in (_dict(x) for x in _list(_dict(rb.get("spec")).get("clusters")))
            if c.get("name") and int(c.get("replicas") or 0) > 0]


def binding_clusters(rb: Obj, _lookup: Lookup | None = None) -> str:
    return ",".join(f"{c['name']}:{int(c.get('replicas') or 0)}" for c in _targets(rb)) or "<none>"


def fully_applied(rb: Obj, lookup: Lookup) -> str:
    """``True`` when every target cluster holds a Work of the binding's current generation whose
    ``Applied`` condition is True; ``False`` when one is missing, stale or not applied; ``Unknown``
    while the binding has no clusters yet."""
    targets = _targets(rb)
    if not targets:
        return "Unknown"
    resource = _dict(_dict(rb.get("spec")).get("resource"))
    work_name = f"{resource.get('namespace', '')}.{resource.get('name', '')}"
    generation = _dict(_dict(rb.get("metadata")).get("annotations")).get(PLACEMENT_GENERATION)
    for target in targets:
        work = lookup("Work", execution_namespace(str(target["name"])), work_name)
        if work is None:
            return "False"
        own = _dict(_dict(work.get("spec")).get("placement")).get("generation")
        if generation is not None and own is not None and str(own) != str(generation):
            return "False"
        applied = [c for c in _list(_dict(work.get("status")).get("conditions"))
                   if _dict(c).get("type") == "Applied"]
        if not applied or applied[0].get("status") != "True":
            return "False"
    return "True"
