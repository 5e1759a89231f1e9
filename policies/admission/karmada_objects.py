"""Admission for the Karmada objects controllers and agents write: Cluster, ResourceBinding, Work.

Their rules guard what placement and the agents trust: a Cluster name that can name its
execution namespace, known sync modes and taint effects, a self-consistent agent status; a
binding that lists each cluster once; a Caldera Work that carries exactly one share and never
holds a single-cluster share (docs/protocol.md).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from policies.admission import AdmissionContext, require
from policies.admission.karmada import one_of, validate_placement
from policies.errors import FieldError
from policies.models.karmada_cluster import SYNC_MODES, TAINT_EFFECTS, Cluster
from policies.models.karmada_common import Taint
from policies.models.karmada_work import (
    EXECUTION_NAMESPACE_PREFIX,
    GANG_PHASES,
    HEALTH_VALUES,
    PLACEMENT_GENERATION,
    ResourceBinding,
    Work,
)

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_CLUSTER_NAME = 48


def validate_cluster(cluster: Cluster) -> list[FieldError]:
    errors: list[FieldError] = []
    name = cluster.metadata.name or ""
    require(errors, bool(name), "metadata.name", "required field is missing")
    if name:
        require(errors, len(name) <= MAX_CLUSTER_NAME and bool(_DNS1123_LABEL.match(name)), "metadata.name",
                f"{name!r} must be a DNS-1123 label of at most 48 characters (it names the namespace karmada-es-<name>)")
    one_of(errors, cluster.spec.sync_mode, SYNC_MODES, "spec.syncMode")
    errors += _validate_taints(cluster.spec.taints or [], "spec.taints")
    return errors


def validate_cluster_status(cluster: Cluster) -> list[FieldError]:
    """What the agent reports must be self-consistent (placement trusts it)."""
    errors: list[FieldError] = []
    status = cluster.status
    if status is None:
        return errors
    summary = status.node_summary
    if summary is not None and summary.total_num is not None and summary.ready_num is not None:
        require(errors, 0 <= summary.ready_num <= summary.total_num, "status.nodeSummary.readyNum",
                f"readyNum ({summary.ready_num}) must be between 0 and totalNum ({summary.total_num})")
    for i, gpu in enumerate(status.gpus or []):
        require(errors, gpu.free <= gpu.total, f"status.gpus[{i}].free",
                f"free ({gpu.free}) must not exceed total ({gpu.total})")
        if gpu.fragmented is not None:
            require(errors, gpu.fragmented <= gpu.free, f"status.gpus[{i}].fragmented",
                    f"fragmented ({gpu.fragmented}) must not exceed free ({gpu.free})")
    seen: set[str] = set()
    for i, queue in enumerate(status.queues or []):
        require(errors, queue.name not in seen, f"status.queues[{i}].name", f"queue {queue.name!r} listed twice")
        seen.add(queue.name)
    topology = status.topology
    if topology is not None:  # docs/protocol.md "Topology"
        tiers = [t.tier for t in topology.tiers]
        require(errors, tiers == sorted(set(tiers)), "status.topology.tiers",
                f"tiers must be distinct and ascending, found {tiers}")
        if tiers:
            require(errors, topology.top_tier > tiers[-1], "status.topology.topTier",
                    f"must be above every reported tier ({tiers[-1]}), found {topology.top_tier}")
    return errors


def validate_binding(binding: ResourceBinding) -> list[FieldError]:
    errors: list[FieldError] = []
    spec = binding.spec
    seen: dict[str, int] = {}
    for i, target in enumerate(spec.clusters or []):
        if target.name in seen:
            errors.append(FieldError(f"spec.clusters[{i}].name", f"cluster {target.name!r} already listed at "
                                                                 f"spec.clusters[{seen[target.name]}]"))
        seen.setdefault(target.name, i)
    names = [c.name for c in spec.components or []]
    for i, name in enumerate(names):
        require(errors, name not in names[:i], f"spec.components[{i}].name", f"component {name!r} listed twice")
    if spec.placement is not None:
        errors += validate_placement(spec.placement, "spec.placement")
    for i, item in enumerate(binding.status.aggregated_status or [] if binding.status else []):
        one_of(errors, item.health, HEALTH_VALUES, f"status.aggregatedStatus[{i}].health")
    return errors


def validate_work(work: Work) -> list[FieldError]:
    errors: list[FieldError] = []
    namespace = work.metadata.namespace
    if namespace:
        require(errors, namespace.startswith(EXECUTION_NAMESPACE_PREFIX), "metadata.namespace",
                f"Works live in the execution namespace {EXECUTION_NAMESPACE_PREFIX}<cluster>, got {namespace!r}")
    for i, manifest in enumerate(work.spec.workload.manifests):
        at = f"spec.workload.manifests[{i}]"
        require(errors, bool(manifest.get("apiVersion")), f"{at}.apiVersion", "required field is missing")
        require(errors, bool(manifest.get("kind")), f"{at}.kind", "required field is missing")
    placement = work.spec.placement
    if placement is not None:
        if placement.clusters == 1 and placement.hold:
            errors.append(FieldError("spec.placement.hold", "a share placed on one cluster (clusters: 1) is never "
                                                            "held: the two-phase start is for gangs across clusters"))
        require(errors, len(work.spec.workload.manifests) == 1, "spec.workload.manifests",
                "a Work with Caldera placement carries exactly one manifest (the cluster's share of the job)")
    status = work.status
    if status is not None:
        if status.gang is not None:
            one_of(errors, status.gang.phase, GANG_PHASES, "status.gang.phase")
        for i, manifest_status in enumerate(status.manifest_statuses or []):
            one_of(errors, manifest_status.health, HEALTH_VALUES, f"status.manifestStatuses[{i}].health")
    return errors


def _validate_taints(taints: Sequence[Taint], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        one_of(errors, taint.effect, TAINT_EFFECTS, f"{path}[{i}].effect")
        require(errors, bool(taint.key), f"{path}[{i}].key", "required field is missing")
        if (taint.key, taint.effect) in seen:
            errors.append(FieldError(f"{path}[{i}]", f"duplicate taint {taint.key}:{taint.effect}"))
        seen.add((taint.key, taint.effect))
    return errors



class ClusterAdmitter:
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_cluster(obj) + validate_cluster_status(obj)
        if old is not None and old.spec.sync_mode and obj.spec.sync_mode != old.spec.sync_mode:
            errors.append(FieldError("spec.syncMode", "is immutable once set"))
        return errors


def _annotated_generation(obj: Any) -> int | None:
    value = (obj.metadata.annotations or {}).get(PLACEMENT_GENERATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def never_back(errors: list[FieldError], path: str, old: int | None, new: int | None) -> None:
    """Fencing: a placement generation only moves forward, so a controller that lost its lease and
    writes what it computed from an older placement is refused instead of undoing the new leader's."""
    if old is not None and new is not None and new < old:
        errors.append(FieldError(path, f"placement generation may not go back from {old} to {new} "
                                       "(a write computed from an older placement)"))


class BindingAdmitter:
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_binding(obj)
        if old is not None:
            never_back(errors, f"metadata.annotations[{PLACEMENT_GENERATION}]", _annotated_generation(old),
                       _annotated_generation(obj))
        return errors


class WorkAdmitter:
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_work(obj)
        if old is not None and old.spec.placement is not None and obj.spec.placement is not None:
            never_back(errors, "spec.placement.generation", old.spec.placement.generation,
                       obj.spec.placement.generation)
        return errors


ADMITTERS: dict[str, Any] = {
    "Cluster": ClusterAdmitter(),
    "ResourceBinding": BindingAdmitter(),
    "Work": WorkAdmitter(),
}
