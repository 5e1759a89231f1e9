"""Facts read from Kubernetes wire dicts of Nodes and Pods (``kubectl get -o json`` shape).

Shared by the member agent (its gateway, scheduler cache and capacity report) and by anything
that derives what an agent would report, such as ``caldera place`` on a cluster layout file
(:mod:`policies.cluster_report`); the federation must not import the agent, so they live here.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Optional, TypeVar

from policies.lru import LRU

Obj = dict[str, Any]
T = TypeVar("T")

#: ``spec.schedulerName`` values whose pods the agent schedules.
MANAGED_SCHEDULERS = frozenset({"volcano", "caldera"})
#: NUMA / GPU / NVLink layout of a node, JSON (docs/topology.md).
TOPOLOGY_ANNOTATION = "caldera.io/topology"


def node_ready(node: Obj) -> bool:
    """The node's ``Ready`` condition is True (no conditions at all counts as ready)."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return True


def node_schedulable(node: Obj) -> bool:
    return node_ready(node) and not (node.get("spec") or {}).get("unschedulable", False)


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def pod_terminal(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def pod_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_node(pod: Obj) -> Optional[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def pod_managed(pod: Obj) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") in MANAGED_SCHEDULERS


_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_wire(value: Any) -> Any:
    """A deep copy of wire data (dicts, lists, tuples of JSON scalars), several times cheaper than
    :func:`copy.deepcopy`, which memoises every object it visits. Anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        # scalars (most leaves) are taken as they are, without a call each
        return {key: item if type(item) in _SCALARS else copy_wire(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else copy_wire(item) for item in value]
    if kind in _SCALARS:
        return value
    if kind is tuple:
        return tuple(copy_wire(item) for item in value)
    return copy.deepcopy(value)


def copy_wire_sharing(value: Obj, last: Optional[Obj]) -> Obj:
    """A private copy of the object ``value`` that shares with ``last`` (an earlier copy that nobody
    changes in place) each top-level part equal to it. An object's later versions often move one part
    (a PodGroup's, its status), and copying the unchanged metadata and spec again was most of the copy."""
    if last is None:
        whole: Obj = copy_wire(value)
        return whole
    return {key: item if type(item) in _SCALARS else (kept if (kept := last.get(key)) == item else copy_wire(item))
            for key, item in value.items()}


def frozen_wire(value: Any) -> Any:
    """A hashable form of wire data that two values share only when they are equal and alike in
    every respect a validation could tell apart: dicts as their (key, value) pairs in their own
    order, lists as tuples, each tagged with its kind, and each scalar with its type (``1``,
    ``1.0`` and ``True`` differ). Raises TypeError for anything else unhashable."""
    kind = type(value)
    if kind is dict:
        return (dict, tuple((key, frozen_wire(item)) for key, item in value.items()))
    if kind is list or kind is tuple:
        return (kind, tuple(frozen_wire(item) for item in value))
    hash(value)
    return (kind, value)


def kept_by_content(memo: LRU[Any, T], value: Any, make: Callable[[Any], T]) -> T:
    """``make(value)``, kept in ``memo`` by ``value``'s :func:`frozen_wire` form: for a pure ``make``
    whose answer is shared and never changed in place. Values that are not wire data are made each
    time, and so is an answer ``make`` raises for (errors are not kept)."""
    try:
        key = frozen_wire(value)
    except TypeError:
        return make(value)
    try:
        return memo[key]  # a kept answer may be None
    except KeyError:
        pass
    made = make(value)
    memo.put(key, made)
    return made
