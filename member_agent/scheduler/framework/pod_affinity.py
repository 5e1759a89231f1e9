"""Inter-pod (anti-)affinity terms as the scheduler sees them (kube-scheduler's InterPodAffinity).

A pod's ``spec.affinity.podAffinity`` / ``podAntiAffinity``
``requiredDuringSchedulingIgnoredDuringExecution`` terms are parsed once into frozen
:class:`PodAffinityTerm` values; the namespaces a term applies to are resolved at parse time
(kube's rule: the listed ``namespaces`` plus those ``namespaceSelector`` matches; neither given
means the pod's own namespace). Caldera's snapshot has no Namespace objects, so a
``namespaceSelector`` is evaluated against the label every namespace carries,
``kubernetes.io/metadata.name``; the empty selector ``{}`` means every namespace.

The session-local shapes that depend on these terms live in ``framework/affinity_shapes.py``:
this module is a leaf the snapshot's TaskSpec can hold without a circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: ``Session.shared`` key of the predicates plugin's inter-pod tracker (preempt and reclaim read it).
SHARED_KEY = "inter-pod-affinity"


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist (admission refuses the rest)
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        return False


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels AND matchExpressions; the empty selector matches all."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return (all(labels.get(k) == v for k, v in self.match_labels)
                and all(r.matches(labels) for r in self.expressions))

    def keys(self) -> set[str]:
        return {k for k, _ in self.match_labels} | {r.key for r in self.expressions}


@dataclass(frozen=True)
class PodAffinityTerm:
    selector: LabelSelector | None  # None (no labelSelector) selects no pod
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None = None

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is selected by this term."""
        if self.selector is None:
            return False
        in_namespace = namespace in self.namespaces or (
            self.namespace_selector is not None
            and self.namespace_selector.matches({NAMESPACE_NAME_LABEL: namespace}))
        return in_namespace and self.selector.matches(labels)


@dataclass(frozen=True)
class PodAffinity:
    """A pod's required inter-pod terms (preferred terms are not modelled)."""

    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti_affinity)

    def terms(self) -> tuple[PodAffinityTerm, ...]:
        return self.affinity + self.anti_affinity


NO_POD_AFFINITY = PodAffinity()


def _selector(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    if raw is None:
        return None
    labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
    expressions = tuple(
        LabelRequirement(str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in e.get("values") or ()))
        for e in raw.get("matchExpressions") or ()
    )
    return LabelSelector(labels, expressions)


def _term(raw: Mapping[str, Any], namespace: str) -> PodAffinityTerm:
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or ())
    ns_selector = _selector(raw.get("namespaceSelector"))
    if not namespaces and ns_selector is None:
        namespaces = frozenset({namespace})
    return PodAffinityTerm(_selector(raw.get("labelSelector")), str(raw.get("topologyKey") or ""),
                           namespaces, ns_selector)


def parse_pod_affinity(spec: Mapping[str, Any], namespace: str) -> PodAffinity:
    """The required terms of a pod spec (``namespace``: the pod's own, for terms naming none)."""
    affinity = spec.get("affinity") or {}
    found = []
    for field in ("podAffinity", "podAntiAffinity"):
        raw = (affinity.get(field) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        found.append(tuple(_term(t, namespace) for t in raw if t.get("topologyKey")))
    if not found[0] and not found[1]:
        return NO_POD_AFFINITY
    return PodAffinity(found[0], found[1])
