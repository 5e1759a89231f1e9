"""What the placement controller reads before it places (a mixin of ``PlacementController``): one
cluster snapshot per cluster version (the Placer caches by its identity), the clusters a policy may
still use, the policies of a namespace, and the newest generation already dispatched for a job.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from federation.controllers import binding as b
from federation.controllers import common as c
from federation.placement.request import ClusterState

log = logging.getLogger("caldera.controllers.placement")
Obj = dict[str, Any]


class ClusterView:
    """Needs, from the controller: ``options``, ``cluster_version`` and the ``clusters``, ``pps``,
    ``cpps`` and ``works`` informers."""

    options: c.ControllerOptions
    cluster_version: int
    _snapshot: tuple[int, tuple[ClusterState, ...]] | None
    clusters: Any
    pps: Any
    cpps: Any
    works: Any

    def cluster_states(self) -> tuple[ClusterState, ...]:
        """One tuple per cluster snapshot (the Placer caches by its identity)."""
        if self._snapshot is None or self._snapshot[0] != self.cluster_version:
            states = []
            for cluster in sorted(self.clusters.items(), key=lambda o: o["metadata"]["name"]):
                try:
                    states.append(b.cluster_snapshot(cluster))
                except Exception as err:  # a malformed status must not stop placement elsewhere
                    log.warning("cluster %s skipped: %s", cluster["metadata"]["name"], err)
            self._snapshot = (self.cluster_version, tuple(states))
        return self._snapshot[1]

    def _usable(self, policy: Mapping[str, Any], now: float) -> tuple[ClusterState, ...]:
        """The snapshot minus clusters whose NoExecute taint this policy tolerates no longer
        (``tolerationSeconds`` ran out; the core itself ignores tolerationSeconds)."""
        states = self.cluster_states()
        tolerations = ((policy.get("spec") or {}).get("placement") or {}).get("clusterTolerations") or []
        expired = set()
        for cluster in self.clusters.items():
            for taint in (cluster.get("spec") or {}).get("taints") or []:
                if taint.get("effect") == "NoExecute" and tolerations:
                    until = b.tolerated_until(taint, tolerations)
                    if until is not None and until <= now:
                        expired.add(cluster["metadata"]["name"])
        return tuple(s for s in states if s.name not in expired) if expired else states

    def policies_for(self, namespace: str) -> list[Obj]:
        return [p for p in self.pps.items() if p["metadata"].get("namespace") == namespace] + self.cpps.items()

    def _dispatched_generation(self, job: Obj) -> int:
        """The newest generation among the job's Works: a binding deleted by hand must not restart
        the count, or agents would fence the new Works off as older than what they hold."""
        uid = job["metadata"].get("uid", "")
        newest = 0
        for work in self.works.items():
            if ((work.get("metadata") or {}).get("labels") or {}).get(c.JOB_UID_LABEL) == uid:
                newest = max(newest, int(((work.get("spec") or {}).get("placement") or {}).get("generation") or 0))
        return newest

    # ------------------------------------------------------------------ reconcile
