"""The fields of Kubernetes objects as the scheduler reads them (wire dicts or pydantic models).

Shared by the snapshot builder, the incremental scheduler cache and its pod versions, so a field
read one way in a full build is read the same way per event.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from member_agent.scheduler.framework.snapshot import NodeAffinity
from member_agent.scheduler.framework.status import TaskStatus
from policies.k8s import node_selector
from policies.k8s.object_view import meta_of
from policies.k8s.timestamps import epoch_seconds


def plain_object(obj: Any) -> Mapping[str, Any]:
    """A Kubernetes object as a mapping: a wire dict as it is, a pydantic model dumped by alias."""
    if type(obj) is dict or isinstance(obj, Mapping):  # a dict first: the ABC check costs more, per event
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[no-any-return]
    raise TypeError(f"not a Kubernetes object: {obj!r}")


def object_ref(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    ns = meta.get("namespace")
    name = meta.get("name", "?")
    return f"{obj.get('kind', '?')} {ns}/{name}" if ns else f"{obj.get('kind', '?')} {name}"


def parse_time(text: Any) -> float:
    """Epoch seconds of a timestamp field (a string or a datetime); 0 when unset."""
    if not text:
        return 0.0
    if isinstance(text, datetime):
        return text.timestamp()
    return _epoch_seconds(str(text))


#: ``epoch_seconds`` remembered per text (pure; errors are raised each time, never remembered): a job's
#: PodGroup and pods carry one creation stamp, the builder reads it for each (~5 us a parse)
_epoch_seconds = lru_cache(maxsize=1024)(epoch_seconds)


def node_affinity(spec: Mapping[str, Any]) -> NodeAffinity:
    na = ((spec.get("affinity") or {}).get("nodeAffinity")) or {}
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = node_selector.terms(required)
    preferred = tuple(
        (int(p.get("weight", 0)), node_selector.term(p.get("preference") or {}))
        for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return NodeAffinity(terms, preferred)


def task_status(pod: Mapping[str, Any]) -> TaskStatus:
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool(meta_of(pod).get("deletionTimestamp"))
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if node else TaskStatus.PENDING
    return {"Succeeded": TaskStatus.SUCCEEDED, "Failed": TaskStatus.FAILED}.get(phase, TaskStatus.UNKNOWN)


def bool_text(value: Any, default: bool) -> bool:
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in ("true", "1", "t"):
        return True
    if text in ("false", "0", "f"):
        return False
    return False  # Volcano: a parse error reads as false
