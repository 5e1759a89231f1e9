"""Render one cluster's Work from a Job and its binding's division (docs/protocol.md), pure.

The manifest is the Job with that cluster's per-task replicas and minAvailable, the share's
job minAvailable, and the annotations the agent needs for global indices
(``caldera.io/task-offsets``, ``task-totals``, ``world-size``) and fencing
(``caldera.io/job-uid``, ``caldera.io/placement-generation``). Karmada's OverridePolicy and
ClusterOverridePolicy are applied last (ClusterOverridePolicies first, then OverridePolicies,
each by name, so namespaced ones have the final say), as Karmada's binding controller does.
Supported overriders: plaintext (JSON patch add/remove/replace), imageOverrider,
commandOverrider, argsOverrider, labelsOverrider, annotationsOverrider. fieldOverrider is
not applied (reported in the Work's ``caldera.io/overrides-skipped`` annotation).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from federation.controllers import common as c
from federation.controllers.matching import policy_ref
from federation.placement.adapters import cluster_affinity
from federation.placement.request import ClusterState
from federation.placement.selectors import affinity_mismatch
from policies.k8s import label_selector, patches
from policies.models.core import PodTemplateSpec
from policies.models.karmada_work import QUEUE_ALLOTMENT, TASK_INDICES
from policies.models.pod_resources import template_request
from policies.resources import PODS, ResourceVector

Obj = Mapping[str, Any]
MANIFEST_META_KEEP = ("name", "namespace", "labels", "annotations")


def share_manifest(job: Obj, share: Mapping[str, Any], totals: Mapping[str, int], generation: int) -> dict[str, Any]:
    """The Job as ``share`` (``{minAvailable, tasks: {task: {replicas, minAvailable, offset}}}``) of it."""
    meta = job.get("metadata") or {}
    manifest: dict[str, Any] = {"apiVersion": job.get("apiVersion"), "kind": job.get("kind")}
    manifest["metadata"] = {k: copy.deepcopy(meta[k]) for k in MANIFEST_META_KEEP if meta.get(k)}
    spec = copy.deepcopy(job.get("spec") or {})
    tasks = share.get("tasks") or {}
    for task in spec.get("tasks") or []:
        mine = tasks.get(task.get("name")) or {}
        task["replicas"] = int(mine.get("replicas") or 0)
        task["minAvailable"] = int(mine.get("minAvailable") or 0)
    spec["minAvailable"] = int(share.get("minAvailable") or 0)
    manifest["spec"] = spec
    notes = manifest["metadata"].setdefault("annotations", {})
    offsets = {t: int(v.get("offset") or 0) for t, v in tasks.items()}
    notes[c.JOB_UID_LABEL] = meta.get("uid", "")
    notes[c.GENERATION] = str(generation)
    notes[c.TASK_OFFSETS] = json.dumps(offsets, sort_keys=True)
    indices = {t: v["indices"] for t, v in tasks.items() if v.get("indices")}
    if indices:  # a re-placed share that kept its running pods' indices: not one range
        notes[TASK_INDICES] = json.dumps(indices, sort_keys=True)
    notes[c.TASK_TOTALS] = json.dumps(dict(totals), sort_keys=True)
    notes[c.WORLD_SIZE] = str(sum(int(v) for v in totals.values()))
    notes[QUEUE_ALLOTMENT] = json.dumps(share_request(spec), sort_keys=True)
    return manifest


def share_request(spec: Mapping[str, Any]) -> dict[str, str]:
    """What the share's replicas request (``pods`` aside): the queue allotment it carries."""
    total = ResourceVector()
    for task in spec.get("tasks") or []:
        replicas = int(task.get("replicas") or 0)
        if replicas and task.get("template"):
            total = total + template_request(PodTemplateSpec.model_validate(task["template"])).scale(replicas)
    return ResourceVector({k: v for k, v in total.items() if k != PODS}).to_resource_list()


# ---------------------------------------------------------------- overrides


def _selects(policy: Obj, job: Obj) -> bool:
    """OverridePolicy selectors: none means every resource in the policy's namespace."""
    meta = policy.get("metadata") or {}
    job_meta = job.get("metadata") or {}
    namespaced = policy.get("kind") == "OverridePolicy"
    if namespaced and meta.get("namespace") != job_meta.get("namespace"):
        return False
    selectors = (policy.get("spec") or {}).get("resourceSelectors")
    if not selectors:
        return namespaced
    for sel in selectors:
        if sel.get("apiVersion") != job.get("apiVersion") or sel.get("kind") != job.get("kind"):
            continue
        if sel.get("namespace") and sel["namespace"] != job_meta.get("namespace"):
            continue
        if sel.get("name"):
            if sel["name"] == job_meta.get("name"):
                return True
            continue
        if label_selector.selects(sel.get("labelSelector"), job_meta.get("labels") or {}, nil=True):
            return True
    return False


def _rules(policy: Obj) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any]]]:
    spec = policy.get("spec") or {}
    rules = [(r.get("targetCluster"), r.get("overriders") or {}) for r in spec.get("overrideRules") or []]
    if spec.get("overriders"):
        rules.append((spec.get("targetCluster"), spec["overriders"]))
    return rules


def _containers(manifest: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for task in (manifest.get("spec") or {}).get("tasks") or []:
        pod = ((task.get("template") or {}).get("spec")) or {}
        yield from pod.get("containers") or []
        yield from pod.get("initContainers") or []


def _override_image(image: str, component: str, operator: str, value: str) -> str:
    registry, rest = ("", image)
    first = image.split("/", 1)
    if len(first) == 2 and ("." in first[0] or ":" in first[0] or first[0] == "localhost"):
        registry, rest = first
    repository, tag = (rest.rsplit(":", 1) + [""])[:2] if ":" in rest else (rest, "")
    parts = {"Registry": registry, "Repository": repository, "Tag": tag}
    current = parts[component]
    parts[component] = value if operator == "replace" else "" if operator == "remove" else current + value
    out = parts["Repository"]
    if parts["Registry"]:
        out = f"{parts['Registry']}/{out}"
    if parts["Tag"]:
        out = f"{out}:{parts['Tag']}"
    return out


def apply_overriders(manifest: dict[str, Any], overriders: Mapping[str, Any]) -> list[str]:
    """Apply one rule's overriders in Karmada's order; returns what could not be applied."""
    skipped: list[str] = []
    for item in overriders.get("imageOverrider") or []:
        for container in _containers(manifest):
            if container.get("image"):
                container["image"] = _override_image(container["image"], item.get("component", "Tag"),
                                                     item.get("operator", "replace"), item.get("value") or "")
    for field, key in (("commandOverrider", "command"), ("argsOverrider", "args")):
        for item in overriders.get(field) or []:
            for container in _containers(manifest):
                if container.get("name") != item.get("containerName"):
                    continue
                values = list(container.get(key) or [])
                if item.get("operator") == "add":
                    values += list(item.get("value") or [])
                else:
                    values = [v for v in values if v not in set(item.get("value") or [])]
                container[key] = values
    for field, key in (("labelsOverrider", "labels"), ("annotationsOverrider", "annotations")):
        for item in overriders.get(field) or []:
            target = manifest.setdefault("metadata", {}).setdefault(key, {})
            for k, v in (item.get("value") or {}).items():
                if item.get("operator") == "remove":
                    target.pop(k, None)
                else:
                    target[k] = v
    for item in overriders.get("plaintext") or []:
        op = {"op": item.get("operator", "replace"), "path": item.get("path", ""), "value": item.get("value")}
        try:
            patched = patches.json_patch(manifest, [op])
        except patches.PatchError as err:
            skipped.append(f"plaintext {item.get('path')}: {err}")
            continue
        manifest.clear()
        manifest.update(patched)
    if overriders.get("fieldOverrider"):
        skipped.append("fieldOverrider is not supported")
    return skipped


def _targets(target: Mapping[str, Any], cluster: ClusterState) -> bool:
    """Whether a rule's targetCluster selects ``cluster`` (Karmada: an invalid selector selects none)."""
    try:
        return not affinity_mismatch(cluster_affinity(target, path="targetCluster"), cluster)
    except label_selector.InvalidSelector:
        return False


def apply_overrides(manifest: dict[str, Any], job: Obj, cluster: ClusterState,
                    policies: Iterable[Obj]) -> tuple[list[str], list[str]]:
    """Apply every matching override policy to ``manifest``; returns (applied refs, problems)."""
    ordered = sorted((p for p in policies if _selects(p, job)),
                     key=lambda p: (p.get("kind") == "OverridePolicy", (p.get("metadata") or {}).get("name", "")))
    applied: list[str] = []
    problems: list[str] = []
    for policy in ordered:
        used = False
        for target, overriders in _rules(policy):
            if target is not None and not _targets(target, cluster):
                continue
            problems += [f"{policy_ref(policy)}: {p}" for p in apply_overriders(manifest, overriders)]
            used = True
        if used:
            applied.append(policy_ref(policy))
    return applied, problems
