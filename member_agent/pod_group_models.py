"""The PodGroup model ``JobRun`` keeps between passes, with a private copy of the wire dict it is
the model of: validated again only where the wire changed.

The scheduler writes a PodGroup's phase and conditions in place, so most passes see the same
PodGroup and many see only its status moved; the PodGroup the controller itself writes is the
model it planned with. Every model here equals ``PodGroup.model_validate`` of the wire dict
(``tests/agent/test_job_run_models.py``).
"""

from __future__ import annotations

from typing import Any, Optional

from member_agent.cluster.gateway import Obj
from policies.lru import LRU
from policies.models.volcano_scheduling import PodGroup, PodGroupStatus
from policies.wire_objects import copy_wire, kept_by_content

#: (a private copy of the wire dict, its model)
Kept = tuple[Obj, PodGroup]


def observed_model(wire: Obj, kept: Optional[Kept]) -> Kept:
    """The model of ``wire``: the kept one while the wire equals its copy; the kept one with a new
    status when only the status moved; else a validation of the whole wire."""
    if kept is not None and kept[0] == wire:
        return kept
    if kept is not None:
        rest = _without_status(kept[0])
        if rest == _without_status(wire):
            moved = _status_moved(wire, kept[1], rest)
            if moved is not None:
                return moved
    return copy_wire(wire), PodGroup.model_validate(wire)


def _status_moved(wire: Obj, model: PodGroup, rest: Obj) -> Optional[Kept]:
    """Only the status moved (the scheduler's phase and conditions): validate that part and keep
    the rest of the model, its spec included (a stable spec lets the next comparison with the
    desired PodGroup short-cut). None when the status is refused (validated whole then, so the
    error names the field from the root)."""
    status = wire.get("status")
    try:
        # the status alone, through PodGroup's own validator (``status_model``)
        moved = model.model_copy(update={"status": None if status is None else status_model(status)})
    except ValueError:
        return None
    # ``rest``, the kept copy of the other parts, equals the wire's and is private (never
    # changed): only the status is copied
    if "status" in wire:
        rest["status"] = copy_wire(status)
    return rest, moved


def written_model(model: PodGroup, wire: Obj) -> Optional[Kept]:
    """The kept model of the PodGroup the controller just wrote: ``wire`` is ``model``'s own dump
    with the model's apiVersion and kind, a creation stamp and the status kept from the observed
    PodGroup; that stamp and status (validated through PodGroup's validator, as a status-only
    change is) put on ``model`` equal a validation of the whole wire, which the next pass paid
    for every PodGroup the controller created or updated. None (validated whole next pass, whose
    error then names the field) when the status is refused."""
    stamp = wire["metadata"]["creationTimestamp"]
    metadata = model.metadata
    if metadata.creation_timestamp != stamp:
        metadata = metadata.model_copy(update={"creation_timestamp": stamp})
    try:
        status = status_model(wire["status"])
    except ValueError:
        return None
    return copy_wire(wire), model.model_copy(update={"metadata": metadata, "status": status})


#: Status models without conditions by their wire content (``frozen_wire``): the controller writes
#: every PodGroup ``{"phase": "Pending"}`` and the scheduler moves many to ``{"phase": "Inqueue",
#: "conditions": []}``; a condition carries a transition id of its own PodGroup, so those are not
#: kept. Shared between PodGroups and never changed in place (a model with another status is a copy).
_STATUSES: LRU[Any, Optional[PodGroupStatus]] = LRU(256)


def _validated(status: Obj) -> Optional[PodGroupStatus]:
    return PodGroup.model_validate({"spec": {}, "status": status}).status


def status_model(status: Obj) -> Optional[PodGroupStatus]:
    """The model of a PodGroup's wire ``status``, as ``PodGroup.model_validate`` makes it: through
    PodGroup's own validator (a PodGroupStatus one would be a second schema; "spec" given, so its
    default factory does not build PodGroupSpec's either). Raises ValueError for a refused one."""
    if isinstance(status, dict) and status.get("conditions"):
        return _validated(status)  # a condition's transition id is its PodGroup's own: not kept
    return kept_by_content(_STATUSES, status, _validated)


def _without_status(obj: Obj) -> Obj:
    return {key: value for key, value in obj.items() if key != "status"}
