"""A pod's TaskSpec carried from its previous version, where the new version moved only what a
kubelet, a binding or the apiserver moves.

A replay (and an agent) sends the scheduler cache each pod three times or more: created, bound
(``spec.nodeName``, the session's device annotations, a Running status) and ended (a status);
each time the cache built the whole TaskSpec again from the wire (requests, selector, affinity,
tolerations, extras, inter-pod terms, the shape key). :func:`task_again` takes the previous
version's TaskSpec instead when the new version's metadata equals the old one's but for
``resourceVersion`` and the annotations, and its spec the old one's but for ``nodeName``: then
every field is the previous one's except those the status, the node and the annotations decide,
which are computed by the builder's own code (``task_status``, :meth:`_Builder.annotated`).
"""

from __future__ import annotations

from typing import Any, Mapping

from member_agent.scheduler.framework.builder import _Builder
from member_agent.scheduler.framework.object_fields import task_status
from member_agent.scheduler.framework.snapshot import TaskSpec
from member_agent.scheduler.framework.topology import PodExtras, extras_annotations, shape_extra

_MOVING_META = frozenset({"resourceVersion", "annotations"})
_MOVING_SPEC = frozenset({"nodeName"})


def task_again(builder: _Builder, old: Mapping[str, Any], task: TaskSpec, pod: Mapping[str, Any]) -> TaskSpec | None:
    """The TaskSpec of ``pod`` given ``task``, the one ``builder.task`` built from ``old`` (the same
    builder and dimensions); None when the versions differ in more than the moving parts (build it
    then). Equal to ``builder.task(pod, ...)`` (``tests/scheduler/test_cache_increments.py``)."""
    old_meta, meta = old.get("metadata") or {}, pod.get("metadata") or {}
    old_spec, spec = old.get("spec") or {}, pod.get("spec") or {}
    if not (same_but(old_spec, spec, _MOVING_SPEC) and same_but(old_meta, meta, _MOVING_META)):
        return None
    moved: dict[str, Any] = {
        "status": task_status(pod), "node": spec.get("nodeName") or None,
        "nominated_node": str((pod.get("status") or {}).get("nominatedNodeName") or ""),
    }
    if (old_meta.get("annotations") or {}) != (meta.get("annotations") or {}):
        # the extras but their annotations read the spec alone, which did not move; the shape key is
        # the old one (the same id) unless the extras' part of it moved
        extras = object.__new__(PodExtras)  # a frozen dataclass: its fields, the annotations replaced
        extras.__dict__.update(task.extras.__dict__)
        extras.__dict__["annotations"] = extras_annotations(meta)
        if shape_extra(extras) == shape_extra(task.extras):
            moved.update(builder.annotated(pod, extras, (), task.pod_affinity, shape=task.shape))
        else:
            shape_base = (task.request.tobytes(), tuple(sorted(task.node_selector.items())), task.affinity,
                          task.tolerations)
            moved.update(builder.annotated(pod, extras, shape_base, task.pod_affinity))
    # the frozen dataclass's fields, the moved ones replaced (``dataclasses.replace`` re-runs the
    # generated __init__, a setattr per field, several times dearer); ``key`` (namespace/name) stays
    clone = object.__new__(TaskSpec)
    clone.__dict__.update(task.__dict__)
    clone.__dict__.update(moved)
    return clone


def same_but(old: Mapping[str, Any], new: Mapping[str, Any], moving: frozenset[str]) -> bool:
    """Whether ``old`` and ``new`` hold equal items but under the keys in ``moving``."""
    if old is new:
        return True
    # copies without the moving keys (a dict copies in C; two comprehensions cost three times as much)
    old, new = dict(old), dict(new)
    for key in moving:
        old.pop(key, None)
        new.pop(key, None)
    return old == new
