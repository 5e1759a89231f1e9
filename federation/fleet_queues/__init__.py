"""Fleet queues: one set of Volcano Queues for the whole fleet (pure, synchronous, no I/O).

``FleetQueues`` keeps every federated Job's phase and each queue's fleet-wide sums; ``decide``
runs Volcano's enqueue and allocate queue gates over them and says which Jobs may be placed.
docs/queues.md explains the model.
"""

from federation.fleet_queues.admission import ADMITTED, FleetQueues, Verdict
from federation.fleet_queues.model import DEFAULT_FLEET_CONF, FleetConf, FleetJob, FleetQueue

__all__ = ["ADMITTED", "DEFAULT_FLEET_CONF", "FleetConf", "FleetJob", "FleetQueue", "FleetQueues", "Verdict"]
