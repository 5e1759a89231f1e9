"""Volcano Queue admission (volcano.md §10.3).

Defaults (CREATE): ``reclaimable`` true, ``weight`` 1, hierarchy annotations rooted at
``root``/``1``. Rules: weight 1–65535, quantities non-negative, guarantee <= deserved <=
capability where given (every guarantee dimension must be in deserved), state Open/Closed,
priority >= 0, parent not self, well-formed hierarchy annotations; online also: the parent
exists, depth <= 5, a child's capability fits its ancestors', siblings' guarantee/deserved
fit the parent's, no hierarchy path is a prefix of another's, and the root queue's quotas
are immutable. :func:`validate_queue_delete` holds the DELETE rules for the API server.
"""

from __future__ import annotations

from typing import Any, Optional

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_non_negative_resources, check_object_name, key_path
from policies.admission.queues import ROOT_QUEUE, child_queues, stored_queue
from policies.errors import FieldError
from policies.models.volcano_scheduling import Queue, QueueSpec
from policies.quantity import Quantity

HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
MAX_WEIGHT = 65535
MAX_QUEUE_DEPTH = 5
DEFAULT_QUEUE = "default"


def _value(q: Any) -> Any:
    return Quantity.parse(q).value


def _check_le(errors: list[FieldError], small: Optional[dict[str, Any]], small_name: str,
              big: Optional[dict[str, Any]], big_name: str, path: str, require_dims: bool = False) -> None:
    """``small[r] <= big[r]`` for each resource of ``small`` that ``big`` has (or must have)."""
    if not small or big is None:
        return
    for name, amount in small.items():
        if name not in big:
            if require_dims:
                errors.append(FieldError(key_path(path, name),
                                         f"{small_name}[{name}]={amount} has no matching {big_name}[{name}]"))
            continue
        if _value(amount) > _value(big[name]):
            errors.append(FieldError(key_path(path, name),
                                     f"{big_name}[{name}]={big[name]} must be >= {small_name}[{name}]={amount}"))


def validate_quotas(spec: QueueSpec, errors: list[FieldError]) -> None:
    guarantee = spec.guarantee_resources() or None
    check_non_negative_resources(errors, spec.capability, "spec.capability")
    check_non_negative_resources(errors, spec.deserved, "spec.deserved")
    check_non_negative_resources(errors, guarantee, "spec.guarantee.resource")
    _check_le(errors, guarantee, "guarantee", spec.capability, "capability", "spec.guarantee.resource")
    _check_le(errors, guarantee, "guarantee", spec.deserved, "deserved", "spec.deserved", require_dims=True)
    _check_le(errors, spec.deserved, "deserved", spec.capability, "capability", "spec.deserved")


def _validate_hierarchy_annotations(annotations: dict[str, str], errors: list[FieldError]) -> None:
    hierarchy, weights = annotations.get(HIERARCHY), annotations.get(HIERARCHY_WEIGHTS)
    if hierarchy is None or weights is None:
        return
    path = key_path("metadata.annotations", HIERARCHY_WEIGHTS)
    if len(hierarchy.split("/")) != len(weights.split("/")):
        errors.append(FieldError(path, f"{HIERARCHY} {hierarchy!r} and {HIERARCHY_WEIGHTS} {weights!r} "
                                       f"must have the same number of levels"))
    for weight in weights.split("/"):
        try:
            ok = float(weight) > 0
        except ValueError:
            ok = False
        if not ok:
            errors.append(FieldError(path, f"weight {weight!r} in {HIERARCHY_WEIGHTS} must be a positive number"))


class QueueAdmitter:
    def mutate(self, obj: Queue, ctx: AdmissionContext, creating: bool) -> Queue:
        if not creating:
            return obj
        annotations = obj.metadata.annotations or {}
        hierarchy, weights = annotations.get(HIERARCHY), annotations.get(HIERARCHY_WEIGHTS)
        if hierarchy is not None and weights is not None and not hierarchy.startswith(ROOT_QUEUE):
            annotations[HIERARCHY] = f"{ROOT_QUEUE}/{hierarchy}"
            annotations[HIERARCHY_WEIGHTS] = f"1/{weights}"
        if obj.spec.reclaimable is None:
            obj.spec.reclaimable = True
        if not obj.spec.weight:
            obj.spec.weight = 1
        return obj

    def validate(self, obj: Queue, old: Queue | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        spec = obj.spec
        check_object_name(errors, obj.metadata.name, "queue")
        if spec.weight is not None and not 1 <= spec.weight <= MAX_WEIGHT:
            errors.append(FieldError("spec.weight", f"weight {spec.weight} must be between 1 and {MAX_WEIGHT}"))
        if spec.priority is not None and spec.priority < 0:
            errors.append(FieldError("spec.priority", "priority must be >= 0"))
        validate_quotas(spec, errors)
        if old is None and obj.status and obj.status.state not in (None, "Open", "Closed"):
            errors.append(FieldError("status.state", f"queue state must be in [Open, Closed], "
                                                     f"got {obj.status.state!r}"))
        if spec.parent is not None and spec.parent == obj.metadata.name:
            errors.append(FieldError("spec.parent", "a queue cannot be its own parent"))
        _validate_hierarchy_annotations(obj.metadata.annotations or {}, errors)
        if old is not None and obj.metadata.name == ROOT_QUEUE:
            for field in ("capability", "deserved", "guarantee"):
                if getattr(spec, field) != getattr(old.spec, field):
                    errors.append(FieldError(f"spec.{field}", f"the root queue's {field} cannot be changed"))
        if ctx.online:
            errors.extend(_validate_against_store(obj, ctx))
        return errors


def _validate_against_store(obj: Queue, ctx: AdmissionContext) -> list[FieldError]:
    errors: list[FieldError] = []
    name, parent = obj.metadata.name, obj.spec.parent
    if parent and parent != name:
        chain: list[dict[str, Any]] = []
        current: Optional[str] = parent
        while current and len(chain) <= MAX_QUEUE_DEPTH:
            stored = stored_queue(ctx, current)
            if stored is None:
                if current != ROOT_QUEUE:  # root may be implicit
                    which = "parent" if current == parent else "ancestor"
                    errors.append(FieldError("spec.parent", f"{which} queue {current!r} does not exist"))
                break
            chain.append(stored)
            current = (stored.get("spec") or {}).get("parent")
            if current == name:
                errors.append(FieldError("spec.parent", f"queue {name!r} would be its own ancestor"))
                break
        depth = 1 + sum(1 for q in chain if q.get("metadata", {}).get("name") != ROOT_QUEUE)
        if depth > MAX_QUEUE_DEPTH:
            errors.append(FieldError("spec.parent", f"queue depth exceeds the maximum of {MAX_QUEUE_DEPTH}"))
        if chain:
            errors.extend(_validate_against_parent(obj, chain, ctx))
    errors.extend(_validate_hierarchy_prefixes(obj, ctx))
    return errors


def _validate_against_parent(obj: Queue, chain: list[dict[str, Any]], ctx: AdmissionContext) -> list[FieldError]:
    errors: list[FieldError] = []
    parent = chain[0]
    parent_name = str(parent.get("metadata", {}).get("name"))
    allocated = {k: v for k, v in ((parent.get("status") or {}).get("allocated") or {}).items() if k != "pods"}
    if parent_name != ROOT_QUEUE and not child_queues(ctx, parent_name) and \
            any(_value(v) > 0 for v in allocated.values()):
        errors.append(FieldError("spec.parent", f"parent queue {parent_name!r} is a leaf with allocated pods "
                                                f"and cannot get child queues"))
    capability = obj.spec.capability or {}
    for ancestor in chain:  # each dimension checked against the nearest ancestor that limits it
        limits = (ancestor.get("spec") or {}).get("capability") or {}
        for res in list(capability):
            if res in limits:
                if _value(capability[res]) > _value(limits[res]):
                    errors.append(FieldError(key_path("spec.capability", res),
                                             f"capability[{res}]={capability[res]} exceeds ancestor queue "
                                             f"{ancestor.get('metadata', {}).get('name')!r} capability "
                                             f"{limits[res]}"))
                capability = {k: v for k, v in capability.items() if k != res}
    siblings = [q for q in (ctx.list("Queue", None) if ctx.list else [])
                if (q.get("spec") or {}).get("parent") == parent_name
                and q.get("metadata", {}).get("name") != obj.metadata.name]
    for field, mine in (("guarantee", obj.spec.guarantee_resources()), ("deserved", obj.spec.deserved or {})):
        parent_quota = _quota(parent, field)
        for res, amount in mine.items():
            if res not in parent_quota:
                continue
            total = _value(amount) + sum((_value(_quota(s, field).get(res, 0)) for s in siblings), 0)
            if total > _value(parent_quota[res]):
                path = key_path("spec.guarantee.resource" if field == "guarantee" else "spec.deserved", res)
                errors.append(FieldError(path, f"the sum of {field}[{res}] of {parent_name!r}'s children "
                                               f"({float(total):g}) exceeds the parent's {parent_quota[res]}"))
    return errors


def _quota(queue: dict[str, Any], field: str) -> dict[str, Any]:
    spec = queue.get("spec") or {}
    if field == "guarantee":
        guarantee = spec.get("guarantee") or {}
        return dict(guarantee.get("resource", guarantee) or {})
    return dict(spec.get(field) or {})


def _validate_hierarchy_prefixes(obj: Queue, ctx: AdmissionContext) -> list[FieldError]:
    mine = (obj.metadata.annotations or {}).get(HIERARCHY)
    if not mine or ctx.list is None:
        return []
    for other in ctx.list("Queue", None):
        if other.get("metadata", {}).get("name") == obj.metadata.name:
            continue
        theirs = (other.get("metadata", {}).get("annotations") or {}).get(HIERARCHY)
        if not theirs:
            continue
        shorter, longer = sorted((mine, theirs), key=len)
        if longer.startswith(shorter + "/"):
            return [FieldError(key_path("metadata.annotations", HIERARCHY),
                               f"{HIERARCHY} {mine!r} conflicts with queue "
                               f"{other.get('metadata', {}).get('name')!r} ({theirs!r}): one is a prefix of the other")]
    return []


def validate_queue_delete(name: str, ctx: AdmissionContext) -> list[FieldError]:
    """DELETE rules: ``default`` and ``root`` stay; a queue with child queues stays."""
    if name in (DEFAULT_QUEUE, ROOT_QUEUE):
        return [FieldError("metadata.name", f"`{name}` queue can not be deleted")]
    children = child_queues(ctx, name)
    if children:
        return [FieldError("metadata.name", f"queue `{name}` has child queues ({', '.join(children)}) "
                                            f"and can not be deleted")]
    return []


ADMITTERS: dict[str, Admitter] = {"Queue": QueueAdmitter()}
