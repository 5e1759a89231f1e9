"""The Pod models of the replay's own pod writes, made from the model before the write.

The job controller reads each version of a pod as a model (``JobRun._pod_model``: one
``Pod.model_validate`` per uid and resourceVersion), and a replay pod has three versions, each
written by :class:`~simulator.member.Member` itself: created (the controller's pod, stamped),
bound (node, session annotations, Running status) and finished (Succeeded status). The member
knows what each write changed, so the new version's model is the previous one with those fields
replaced (``model_copy``) and the new status validated alone: about a third of validating the
whole pod again. Each function's result equals ``Pod.model_validate`` of the written wire
(``tests/simulate/test_pod_models.py`` compares them over a replay); the member hands it to the
run with :meth:`~member_agent.job_runner.JobRun.carry_pod_model`.
"""

from __future__ import annotations

from typing import Any, Optional

from policies.lru import LRU
from policies.models.core import Pod, PodStatus
from policies.wire_objects import kept_by_content

Obj = dict[str, Any]

#: Status models by their wire content without ``startTime`` (``frozen_wire``): a created pod's
#: ``{"phase": "Pending"}`` is every pod's, and a Running or Succeeded status differs from another
#: pod's only in its start time. Shared between pods, never changed in place (the controller only
#: reads observed pods).
_STATUSES: LRU[Any, Optional[PodStatus]] = LRU(256)


def _validated(status: Obj) -> Optional[PodStatus]:
    # through Pod's own validator (a PodStatus one would be a second schema), ``spec`` given so
    # that its default factory does not build PodSpec's
    return Pod.model_validate({"spec": {}, "status": status}).status


def status_model(status: Optional[Obj]) -> Optional[PodStatus]:
    """The model of a pod's wire ``status``, equal to the one ``Pod.model_validate`` makes: the kept
    model of the same status without ``startTime``, with the start time put back (a plain string
    field, which validation keeps as it is)."""
    if status is None:
        return None
    start = status.get("startTime")
    if start is not None and type(start) is not str:
        return _validated(status)  # not kept: validation decides what it becomes
    rest = {key: value for key, value in status.items() if key != "startTime"} if start is not None else status
    model = kept_by_content(_STATUSES, rest, _validated)
    if start is None or model is None:
        return model
    return model.model_copy(update={"start_time": start})


def created(built: Pod, wire: Obj) -> Pod:
    """The model of ``wire``, the dump of ``built`` (with its apiVersion and kind) that the member
    then stamped: a uid, a creation time and a resourceVersion in the metadata, and a status."""
    md = wire["metadata"]
    metadata = built.metadata.model_copy(update={
        "uid": md.get("uid"), "creation_timestamp": md.get("creationTimestamp"),
        "resource_version": md.get("resourceVersion")})
    return built.model_copy(update={"metadata": metadata, "status": status_model(wire.get("status"))})


def bound(before: Pod, wire: Obj) -> Pod:
    """The model of ``wire``, a pod whose previous version's model is ``before``, after a binding
    that changed only ``spec.nodeName``, the annotations, the status and the resourceVersion."""
    md = wire["metadata"]
    annotations = md.get("annotations")
    metadata = before.metadata.model_copy(update={
        "annotations": None if annotations is None else dict(annotations),
        "resource_version": md.get("resourceVersion")})
    spec = before.spec.model_copy(update={"node_name": wire["spec"].get("nodeName")})
    return before.model_copy(update={"metadata": metadata, "spec": spec, "status": status_model(wire.get("status"))})


def restatused(before: Pod, wire: Obj) -> Pod:
    """The model of ``wire``, a pod whose previous version's model is ``before``, after a write
    that changed only the status and the resourceVersion (the kubelet ending it)."""
    metadata = before.metadata.model_copy(update={"resource_version": wire["metadata"].get("resourceVersion")})
    return before.model_copy(update={"metadata": metadata, "status": status_model(wire.get("status"))})
