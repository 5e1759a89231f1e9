"""The table of kinds Caldera serves: API group, version, plural, scope, short names.

This is the single source for the API server's discovery documents and routes, the
codec's dispatch on apiVersion/kind, and the CLI's kind names (``vcjob``, ``pp``...).
Model classes are imported lazily by dotted path so that this table stays cheap to load.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from policies.errors import NotACalderaKind, UnknownKind

if TYPE_CHECKING:  # pragma: no cover
    from policies.models.meta import TypedObject


@dataclass(frozen=True)
class KindInfo:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    model_path: str
    short_names: tuple[str, ...] = ()
    has_status: bool = True
    #: Kinds accepted from users but stored as another kind after conversion.
    converts_to: str | None = None
    categories: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def resource_ref(self) -> str:
        """``jobs.batch.volcano.sh`` (or ``pods`` for the core group), as kubectl prints it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @cached_property
    def model(self) -> "type[TypedObject]":
        module_name, _, attr = self.model_path.rpartition(".")
        return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]


def _k(group: str, version: str, kind: str, plural: str, namespaced: bool, module: str,
       short: tuple[str, ...] = (), has_status: bool = True, converts_to: str | None = None) -> KindInfo:
    return KindInfo(group, version, kind, plural, namespaced, f"policies.models.{module}.{kind}",
                    short, has_status, converts_to)


KINDS: tuple[KindInfo, ...] = (
    # Volcano
    _k("batch.volcano.sh", "v1alpha1", "Job", "jobs", True, "volcano_batch", ("vcjob", "vj")),
    _k("batch.volcano.sh", "v1alpha1", "VCJob", "vcjobs", True, "volcano_batch", (), converts_to="Job"),
    _k("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", True, "volcano_scheduling", ("pg", "podgroup-v1beta1")),
    _k("scheduling.volcano.sh", "v1beta1", "Queue", "queues", False, "volcano_scheduling", ("q", "queue-v1beta1")),
    _k("flow.volcano.sh", "v1alpha1", "JobFlow", "jobflows", True, "volcano_flow", ("jf",)),
    _k("flow.volcano.sh", "v1alpha1", "JobTemplate", "jobtemplates", True, "volcano_flow", ("jt",)),
    # A member cluster's network topology (served by `caldera serve --member-mode` for its agent)
    _k("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", False, "volcano_topology", ("hn",)),
    # Kubernetes
    _k("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, "scheduling_k8s", ("pc",), has_status=False),
    _k("", "v1", "Namespace", "namespaces", False, "core", ("ns",)),
    _k("", "v1", "Node", "nodes", False, "core", ("no",)),
    _k("", "v1", "Pod", "pods", True, "core", ("po",)),
    _k("", "v1", "ConfigMap", "configmaps", True, "core", ("cm",), has_status=False),
    _k("", "v1", "Event", "events", True, "core", ("ev",), has_status=False),
    _k("coordination.k8s.io", "v1", "Lease", "leases", True, "core", (), has_status=False),
    _k("", "v1", "ServiceAccount", "serviceaccounts", True, "rbac", ("sa",), has_status=False),
    # RBAC (enforced by federation/apiserver/rbac)
    _k("rbac.authorization.k8s.io", "v1", "Role", "roles", True, "rbac", (), has_status=False),
    _k("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, "rbac", (), has_status=False),
    _k("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, "rbac", (), has_status=False),
    _k("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, "rbac", (),
       has_status=False),
    # Kubeflow training operators (converted to Volcano Jobs)
    _k("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", True, "kubeflow", (), converts_to="Job"),
    _k("kubeflow.org", "v1", "TFJob", "tfjobs", True, "kubeflow", (), converts_to="Job"),
    _k("kubeflow.org", "v1", "MPIJob", "mpijobs", True, "kubeflow", (), converts_to="Job"),
    # Karmada
    _k("policy.karmada.io", "v1alpha1", "PropagationPolicy", "propagationpolicies", True, "karmada_policy", ("pp",), has_status=False),
    _k("policy.karmada.io", "v1alpha1", "ClusterPropagationPolicy", "clusterpropagationpolicies", False, "karmada_policy", ("cpp",), has_status=False),
    _k("policy.karmada.io", "v1alpha1", "OverridePolicy", "overridepolicies", True, "karmada_policy", ("op",), has_status=False),
    _k("policy.karmada.io", "v1alpha1", "ClusterOverridePolicy", "clusteroverridepolicies", False, "karmada_policy", ("cop",), has_status=False),
    _k("cluster.karmada.io", "v1alpha1", "Cluster", "clusters", False, "karmada_cluster", ()),
    _k("work.karmada.io", "v1alpha2", "ResourceBinding", "resourcebindings", True, "karmada_work", ("rb",)),
    _k("work.karmada.io", "v1alpha1", "Work", "works", True, "karmada_work", ()),
)

#: Kinds from neighbouring systems that appear in manifests next to ours.
FOREIGN_GROUPS = ("monitoring.coreos.com", "kubescheduler.config.k8s.io", "apps", "networking.k8s.io",
                  "apiextensions.k8s.io", "admissionregistration.k8s.io",
                  "batch", "autoscaling", "policy", "storage.k8s.io")

_BY_GVK: dict[tuple[str, str], KindInfo] = {(k.api_version, k.kind): k for k in KINDS}
_BY_RESOURCE: dict[tuple[str, str, str], KindInfo] = {(k.group, k.version, k.plural): k for k in KINDS}


def known_kinds() -> list[str]:
    return [f"{k.kind} ({k.api_version})" for k in KINDS]


def lookup(api_version: str, kind: str, where: str = "") -> KindInfo:
    """The kind served for apiVersion/kind; a clear error names what is known otherwise."""
    info = _BY_GVK.get((api_version, kind))
    if info is not None:
        return info
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    ours = {k.group for k in KINDS}
    if group not in ours or group in FOREIGN_GROUPS or not kind:
        raise NotACalderaKind(api_version, kind, known_kinds(), where)
    raise UnknownKind(api_version, kind, known_kinds(), where)


def by_resource(group: str, version: str, plural: str) -> KindInfo | None:
    return _BY_RESOURCE.get((group, version, plural))


def resolve(name: str) -> KindInfo:
    """A kind from a CLI name: plural, singular, kind, short name, or ``plural.group``."""
    wanted = name.lower()
    for info in KINDS:
        names = {info.plural, info.singular, info.kind.lower(), info.resource_ref, *info.short_names}
        if wanted in names:
            return info
    choices = sorted({n for k in KINDS for n in (k.plural, *k.short_names)})
    raise UnknownKind("", name, choices)
