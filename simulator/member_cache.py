"""The scheduler cache a replayed member cluster starts with: its cluster file's nodes and
hyperNodes, then the replay's Queues (weight 1, reclaimable, open) and PriorityClasses, upserted
in that order as the agent's informers would deliver them."""

from __future__ import annotations

from typing import Any, Mapping

from member_agent.scheduler.scheduler_cache import SchedulerCache

Obj = dict[str, Any]


def seeded_cache(nodes: list[Obj], hyper_nodes: tuple[Obj, ...], queues: tuple[str, ...],
                 priority_classes: Mapping[str, int]) -> SchedulerCache:
    cache = SchedulerCache()
    for node in nodes:
        cache.upsert(node)
    for hyper_node in hyper_nodes:
        cache.upsert(hyper_node)
    for queue in queues:
        cache.upsert({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                      "metadata": {"name": queue}, "spec": {"weight": 1, "reclaimable": True},
                      "status": {"state": "Open"}})
    for pc_name, value in sorted(priority_classes.items()):
        cache.upsert({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": pc_name}, "value": value})
    return cache
