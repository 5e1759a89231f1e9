"""``volcano_queue_{allocated,deserved,capability}``: the per-queue gauges the seed's alert reads.

Volcano itself splits queue gauges by unit (``volcano_queue_allocated_milli_cpu``, ...; those stay in
:mod:`member_agent.metrics`). The seed's ``VolcanoQueueGPUSaturation`` divides
``volcano_queue_allocated{nvidia_com_gpu != ""}`` by ``volcano_queue_capability{...}``, names Volcano
does not export. These families provide them: one series per (queue, resource), amounts in natural
units (cores, bytes, GPUs), labels from :func:`policies.resource_labels.resource_labels`. A resource
named in a queue's deserved or capability is exported as allocated 0 while nothing uses it, so the
ratio exists (and is 0) before the first pod runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from policies.resource_labels import natural_amount, resource_labels

KINDS = (("allocated", "allocated", "Resources allocated to the queue's running pods in this cluster"),
         ("deserved", "deserved", "The queue's deserved resources (spec.deserved)"),
         ("capability", "capability", "The queue's resource limit (spec.capability)"))


class QueueGauges(Collector):
    """Holds the latest queue summaries (``Cluster.status.queues`` entries) and exports them."""

    def __init__(self) -> None:
        self.summaries: list[Mapping[str, Any]] = []

    def update(self, summaries: Iterable[Mapping[str, Any]]) -> None:
        self.summaries = [dict(s) for s in summaries]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        families = {kind: GaugeMetricFamily(f"volcano_queue_{kind}", text) for kind, _, text in KINDS}
        for entry in self.summaries:
            queue = str(entry.get("name"))
            named = {r for _, field, _ in KINDS for r in (entry.get(field) or {})}
            for kind, field, _ in KINDS:
                values = dict(entry.get(field) or {})
                if kind == "allocated":
                    values = {r: values.get(r, 0) for r in sorted(named)}
                for resource, quantity in sorted(values.items()):
                    try:
                        amount = natural_amount(resource, quantity)
                    except (ValueError, TypeError):
                        continue  # a quantity the API server accepted but we cannot read: not exported
                    families[kind].add_sample(f"volcano_queue_{kind}",
                                              {"queue_name": queue, "scope": "cluster", **resource_labels(resource)}, amount)
        return list(families.values())

    def describe(self) -> list[Any]:
        return []
