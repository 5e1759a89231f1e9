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

from policies.k8s import label_selector
from policies.k8s.label_selector import LabelSelector

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: ``Session.shared`` key of the predicates plugin's inter-pod tracker (preempt and reclaim read it).
SHARED_KEY = "inter-pod-affinity"


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
    """A pod's inter-pod terms: required ones (the filter; truthiness means "has required
    terms") and weighted preferred ones (only the InterPodAffinity score reads them)."""

    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti_affinity)

    @property
    def scored(self) -> bool:
        """Whether the InterPodAffinity score reads anything of this pod's terms."""
        return bool(self.affinity or self.preferred_affinity or self.preferred_anti_affinity)

    def terms(self) -> tuple[PodAffinityTerm, ...]:
        return self.affinity + self.anti_affinity


NO_POD_AFFINITY = PodAffinity()


def _selector(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    """A term's selector; admission refuses invalid ones, and one stored before selects nothing."""
    return label_selector.parse_or_nothing(raw)


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
    preferred = []
    for field in ("podAffinity", "podAntiAffinity"):
        raw = (affinity.get(field) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        found.append(tuple(_term(t, namespace) for t in raw if t.get("topologyKey")))
        weighted = (affinity.get(field) or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        preferred.append(tuple(
            (int(w.get("weight") or 0), _term(w.get("podAffinityTerm") or {}, namespace)) for w in weighted
            if isinstance(w, Mapping) and (w.get("podAffinityTerm") or {}).get("topologyKey")))
    if not any(found) and not any(preferred):
        return NO_POD_AFFINITY
    return PodAffinity(found[0], found[1], preferred[0], preferred[1])
