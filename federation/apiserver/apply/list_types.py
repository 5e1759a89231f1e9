"""Server-side apply's list semantics per kind and path, as the served schemas declare them. Pure.

kube-apiserver's structured-merge-diff reads ``x-kubernetes-list-type`` (and
``x-kubernetes-list-map-keys``) from the kind's schema: the built-in types carry them as Go markers
(``+listType=map``, ``+listMapKey=name``; older fields only ``patchMergeKey``, which it reads the same
way), a CRD as its OpenAPI schema states them. A list the schema says nothing about is atomic.

A path is the tuple of JSON field names from the object's root; list items are transparent (the
containers of a pod are at ``("spec", "containers")``, their ports at ``("spec", "containers",
"ports")``). The same tables feed the OpenAPI documents (:mod:`federation.apiserver.openapi`), so
what clients read is what apply does.

Built-in markers are those of k8s.io/api core/v1 (1.33 types.go; for fields older than the explicit
markers, their ``patchMergeKey``). The Volcano Job CRD (volcano-sh/volcano
``config/crd/volcano/bases/batch.volcano.sh_jobs.yaml``, controller-gen 0.20) declares no list type
on ``spec.tasks``, ``spec.policies``, ``spec.volumes`` or ``status.conditions``: they are atomic, so
an apply of ``spec.tasks`` owns and replaces the whole list, as kube does. Inside a task's pod
template the CRD carries the core/v1 markers (containers keyed by name and so on), published here too.
Karmada's CRDs (checked on ``policy.karmada.io_propagationpolicies.yaml``) and Kubeflow's declare no
list type on their own lists: atomic.
"""

from __future__ import annotations

from collections.abc import Mapping

ListType = tuple[str, tuple[str, ...]]
FieldPath = tuple[str, ...]
ATOMIC: ListType = ("atomic", ())
SET: ListType = ("set", ())


def _map(*keys: str) -> ListType:
    return ("map", keys)


#: a map key an item may leave out, and the value kube defaults it to before merging
#: (container ports are keyed by containerPort and protocol, protocol defaulting to TCP)
KEY_DEFAULTS: dict[str, object] = {"protocol": "TCP"}

_META: dict[FieldPath, ListType] = {
    ("finalizers",): SET, ("ownerReferences",): _map("uid"), ("managedFields",): ATOMIC,
}
_SELECTOR: dict[FieldPath, ListType] = {("matchExpressions",): ATOMIC, ("matchExpressions", "values"): ATOMIC}
_CONTAINER: dict[FieldPath, ListType] = {
    ("command",): ATOMIC, ("args",): ATOMIC, ("ports",): _map("containerPort", "protocol"),
    ("envFrom",): ATOMIC, ("env",): _map("name"), ("volumeMounts",): _map("mountPath"),
    ("volumeDevices",): _map("devicePath"), ("resizePolicy",): ATOMIC,
}
_NODE_SELECTOR_TERM: dict[FieldPath, ListType] = {
    ("matchExpressions",): ATOMIC, ("matchExpressions", "values"): ATOMIC,
    ("matchFields",): ATOMIC, ("matchFields", "values"): ATOMIC,
}


def _under(prefix: FieldPath, table: Mapping[FieldPath, ListType]) -> dict[FieldPath, ListType]:
    return {prefix + path: kind for path, kind in table.items()}


def _affinity() -> dict[FieldPath, ListType]:
    out: dict[FieldPath, ListType] = {}
    node = ("nodeAffinity",)
    out[node + ("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")] = ATOMIC
    out |= _under(node + ("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"), _NODE_SELECTOR_TERM)
    out[node + ("preferredDuringSchedulingIgnoredDuringExecution",)] = ATOMIC
    out |= _under(node + ("preferredDuringSchedulingIgnoredDuringExecution", "preference"), _NODE_SELECTOR_TERM)
    for pod in (("podAffinity",), ("podAntiAffinity",)):
        for term in (("requiredDuringSchedulingIgnoredDuringExecution",),
                     ("preferredDuringSchedulingIgnoredDuringExecution", "podAffinityTerm")):
            out[pod + term[:1]] = ATOMIC
            out[pod + term + ("namespaces",)] = ATOMIC
            out[pod + term + ("matchLabelKeys",)] = ATOMIC
            out[pod + term + ("mismatchLabelKeys",)] = ATOMIC
            out |= _under(pod + term + ("labelSelector",), _SELECTOR)
            out |= _under(pod + term + ("namespaceSelector",), _SELECTOR)
    return out


def _pod_spec() -> dict[FieldPath, ListType]:
    out: dict[FieldPath, ListType] = {
        ("volumes",): _map("name"), ("initContainers",): _map("name"), ("containers",): _map("name"),
        ("ephemeralContainers",): _map("name"), ("imagePullSecrets",): _map("name"), ("tolerations",): ATOMIC,
        ("hostAliases",): _map("ip"), ("hostAliases", "hostnames"): ATOMIC,
        ("topologySpreadConstraints",): _map("topologyKey", "whenUnsatisfiable"),
        ("topologySpreadConstraints", "matchLabelKeys"): ATOMIC, ("readinessGates",): ATOMIC,
        ("schedulingGates",): _map("name"), ("resourceClaims",): _map("name"),
        ("securityContext", "supplementalGroups"): ATOMIC, ("securityContext", "sysctls"): ATOMIC,
        ("dnsConfig", "nameservers"): ATOMIC, ("dnsConfig", "searches"): ATOMIC, ("dnsConfig", "options"): ATOMIC,
    }
    for containers in ("initContainers", "containers", "ephemeralContainers"):
        out |= _under((containers,), _CONTAINER)
    out |= _under(("affinity",), _affinity())
    out |= _under(("topologySpreadConstraints", "labelSelector"), _SELECTOR)
    return out


POD_SPEC = _pod_spec()
_POD_STATUS: dict[FieldPath, ListType] = {
    ("conditions",): _map("type"), ("podIPs",): _map("ip"), ("hostIPs",): ATOMIC,
    ("initContainerStatuses",): ATOMIC, ("containerStatuses",): ATOMIC, ("ephemeralContainerStatuses",): ATOMIC,
}
_POD_TEMPLATE = _under(("metadata",), _META) | _under(("spec",), POD_SPEC)

_CORE: dict[str, dict[FieldPath, ListType]] = {
    "Pod": _under(("spec",), POD_SPEC) | _under(("status",), _POD_STATUS),
    "Node": {("spec", "podCIDRs"): SET, ("spec", "taints"): ATOMIC, ("status", "conditions"): _map("type"),
             ("status", "addresses"): _map("type"), ("status", "images"): ATOMIC,
             ("status", "images", "names"): ATOMIC, ("status", "volumesInUse"): ATOMIC,
             ("status", "volumesAttached"): ATOMIC},
    "Namespace": {("spec", "finalizers"): ATOMIC, ("status", "conditions"): _map("type")},
    "ServiceAccount": {("secrets",): _map("name"), ("imagePullSecrets",): ATOMIC},
}
_RULES = {("rules",): ATOMIC, ("rules", "verbs"): ATOMIC, ("rules", "apiGroups"): ATOMIC,
          ("rules", "resources"): ATOMIC, ("rules", "resourceNames"): ATOMIC, ("rules", "nonResourceURLs"): ATOMIC}
_RBAC: dict[str, dict[FieldPath, ListType]] = {
    "Role": _RULES, "ClusterRole": _RULES | {("aggregationRule", "clusterRoleSelectors"): ATOMIC},
    "RoleBinding": {("subjects",): ATOMIC}, "ClusterRoleBinding": {("subjects",): ATOMIC},
}
#: what the Volcano CRDs declare: nothing on their own lists, core/v1 markers inside pod templates
_VOLCANO_JOB_SPEC = {("tasks",): ATOMIC} | _under(("tasks", "template"), _POD_TEMPLATE)

BY_KIND: dict[tuple[str, str], dict[FieldPath, ListType]] = {
    **{("v1", kind): table for kind, table in _CORE.items()},
    **{("rbac.authorization.k8s.io/v1", kind): table for kind, table in _RBAC.items()},
    ("batch.volcano.sh/v1alpha1", "Job"): _under(("spec",), _VOLCANO_JOB_SPEC),
    ("batch.volcano.sh/v1alpha1", "VCJob"): _under(("spec",), _VOLCANO_JOB_SPEC),
    ("flow.volcano.sh/v1alpha1", "JobTemplate"): _under(("spec",), _VOLCANO_JOB_SPEC),
}


def lists_of(api_version: str, kind: str) -> dict[FieldPath, ListType]:
    """Every declared list of a kind (metadata's included), by path."""
    return _under(("metadata",), _META) | BY_KIND.get((api_version, kind), {})


def list_type(lists: Mapping[FieldPath, ListType], path: FieldPath) -> ListType:
    return lists.get(path, ATOMIC)
