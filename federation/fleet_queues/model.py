"""What the fleet queue core reasons about: queues, jobs and the configuration that picks the rule.

Quantities are :class:`~policies.resources.ResourceVector` in Volcano's scheduler units (milli-cpu,
bytes, milli-GPUs). A queue's ``capability`` lists only the dimensions it caps; every other
dimension is unlimited (``math.inf`` once resolved), and cpu or memory written as 0 or less count
as unlimited too, as Volcano's proportion and capacity plugins read them.

Phases of a job at the federation (Volcano's PodGroup phases, fleet-wide):

* ``Pending``: not admitted; it takes nothing from its queue;
* ``Inqueue``: admitted by the enqueue rule; its ``minResources`` count in the queue's ``inqueue``;
* ``Allocated``: its queue lets it take its whole request (Volcano's *allocatable*); the request
  counts in ``allocated`` from now on, and the job may be placed and dispatched;
* a job the federation placed stays ``Allocated`` until it finishes or is deleted; a placement that
  fails sends it back to ``Inqueue``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from policies.resources import CPU, MEMORY, ResourceVector

JobPhase = Literal["Pending", "Inqueue", "Allocated"]
QueuePlugin = Literal["proportion", "capacity"]
ROOT = "root"
DEFAULT_QUEUE = "default"
INF = math.inf


@dataclass(frozen=True)
class FleetQueue:
    """One Volcano Queue as the federation holds it (spec plus the state it is in)."""

    name: str
    weight: int = 1
    priority: int = 0
    state: str = "Open"
    parent: str | None = None
    capability: ResourceVector = field(default_factory=ResourceVector)
    guarantee: ResourceVector = field(default_factory=ResourceVector)
    deserved: ResourceVector = field(default_factory=ResourceVector)
    reclaimable: bool = True

    def capability_limit(self, name: str) -> float:
        """The cap on one dimension: unset (and cpu/memory <= 0) is unlimited."""
        if name not in self.capability:
            return INF
        amount = self.capability[name]
        if name in (CPU, MEMORY) and amount <= 0:
            return INF
        return amount

    @property
    def capped(self) -> bool:
        return any(self.capability_limit(n) < INF for n in self.capability)


@dataclass
class FleetJob:
    """A federated Job as its queue sees it."""

    key: tuple[str, str]
    queue: str
    min_resources: ResourceVector
    request: ResourceVector
    priority: int = 0
    created: float = 0.0
    phase: JobPhase = "Pending"

    @property
    def elastic(self) -> ResourceVector:
        """What the job holds above its minimum once allocated (Volcano's ``GetElasticResources``)."""
        if self.phase != "Allocated":
            return ResourceVector()
        return (self.request - self.min_resources).clamp_zero()


@dataclass(frozen=True)
class FleetConf:
    """The parts of a ``volcano-scheduler.conf`` that decide fleet admission.

    ``plugin``: the queue plugin (``proportion`` or ``capacity``; ``None``: no queue plugin, so
    queues only order jobs); ``hierarchical``: capacity's ``enableHierarchy``; ``enqueue``: whether
    the queue plugin's ``enableJobEnqueued`` is on; ``overcommit_factor``: the overcommit plugin's
    ``overcommit-factor`` when the conf writes one (its enqueue check then applies to the fleet's
    total; without a written factor the fleet's room is left to placement's exact estimates);
    ``reclaim``: the conf's actions name ``reclaim`` or ``gangreclaim``, so a queue below its
    deserved share takes room back across clusters (fleet_queues/reclaim.py); Volcano's default
    actions do not.
    """

    plugin: QueuePlugin | None = "proportion"
    hierarchical: bool = False
    enqueue: bool = True
    overcommit_factor: float | None = None
    reclaim: bool = False


#: Volcano's compiled-in default conf: proportion (its overcommit names no factor: placement judges room).
DEFAULT_FLEET_CONF = FleetConf()
