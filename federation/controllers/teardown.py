"""Dispatch's second phase of a gang's start: after the release, complete or tear down.

Mixed into :class:`federation.controllers.dispatch.DispatchController`. The verdict is
:func:`federation.controllers.post_release.judge`; a teardown cancels every share (agents delete
the gang's pods, bound ones too), records ``caldera.io/torn-down`` on the binding, and holds the
next generation back until the cut-off shares are surely stopped: their agents fence at their
spanning fence (before the lease grace ran out) and their pods get their termination grace.
Placement then restarts the gang elsewhere or ends it, as its ``PodEvicted`` policy says
(:mod:`federation.controllers.triggers`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from federation.controllers import common as c
from federation.controllers import post_release
from federation.controllers.binding import tolerated_until
from federation.controllers.deletion import job_of
from federation.controllers.fence_check import SPANNING_SLACK
from federation.controllers.health_state import UNREACHABLE
from federation.controllers.two_phase import Verdict

Obj = Mapping[str, Any]
DEFAULT_TERMINATION_GRACE = 30.0


def pinned_by_policy(rb: Obj) -> bool:
    """Whether the binding's policy tolerates the unreachable NoExecute taint forever (no failover)."""
    tolerations = (((rb.get("spec") or {}).get("placement") or {}).get("clusterTolerations")) or []
    taint = {"key": UNREACHABLE, "effect": "NoExecute"}
    return tolerated_until(taint, [t for t in tolerations if isinstance(t, Mapping)]) is None


def unknown_clusters(clusters: Mapping[str, Obj]) -> set[str]:
    """Clusters whose Lease ran out (Ready=Unknown, or the unreachable taint)."""
    out = set()
    for name, cluster in clusters.items():
        ready = next((cond for cond in (cluster.get("status") or {}).get("conditions") or []
                      if isinstance(cond, Mapping) and cond.get("type") == "Ready"), {})
        tainted = any(isinstance(t, Mapping) and t.get("key") == UNREACHABLE
                      for t in (cluster.get("spec") or {}).get("taints") or [])
        if ready.get("status") == "Unknown" or tainted:
            out.add(name)
    return out


def termination_grace(cluster: Obj | None) -> float:
    """The pod termination grace the cluster's agent fences with (its report, else the published one)."""
    status = (cluster or {}).get("status") or {}
    for source in (status.get("fence"), status.get("failoverTiming")):
        if isinstance(source, Mapping):
            try:
                return float(source["podTerminationGraceSeconds"])
            except (KeyError, TypeError, ValueError):
                continue
    return DEFAULT_TERMINATION_GRACE


class TeardownMixin:
    """Needs the dispatch controller's ``works``, ``clusters``, ``bindings``, ``queue``, ``options``,
    ``clock``, ``_cancelled``, ``_annotate`` and ``_event`` (it is only ever mixed into it)."""

    works: Any
    clusters: Any
    bindings: Any
    queue: Any
    options: Any
    clock: Any
    _cancelled: Any
    _annotate: Any
    _event: Any

    def _on_cluster(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        """A cluster turning Unknown: look again at every job with a Work there."""
        name = (obj.get("metadata") or {}).get("name", "")
        if name not in unknown_clusters({name: obj}):
            return
        namespace = c.execution_ns(name)
        for work in self.works.items():
            if (work.get("metadata") or {}).get("namespace") == namespace:
                key = job_of(work)
                if key is not None:
                    self.queue.add(key)

    def _start_deadline(self, job: Obj) -> float:
        value = c.int_annotation(job, post_release.START_DEADLINE, int(self.options.start_deadline_seconds))
        return float(value if value >= 1 else self.options.start_deadline_seconds)

    def _judge_started(self, key: Any, job: Obj, rb: Obj, generation: int,
                       works: Mapping[str, Obj | None]) -> Verdict:
        notes = c.annotations_of(rb)
        released_at = c.parse_time(notes.get(post_release.RELEASED_AT)) or self.clock()
        clusters = {o["metadata"]["name"]: o for o in self.clusters.items()}
        started = c.int_annotation(rb, post_release.STARTED_GENERATION, -1) == generation
        # a gang its policy keeps where it is (no failover) is never torn down for an Unknown cluster
        unknown = set() if pinned_by_policy(rb) else unknown_clusters(clusters)
        return post_release.judge(works, generation, released_at, self._start_deadline(job), unknown, started,
                                  self.clock())

    async def _torn_down(self, job: Obj, rb: Obj, generation: int, shares: dict[str, Any],
                         verdict: Verdict, clusters: Mapping[str, Obj]) -> None:
        cut_off = sorted(set(verdict.failed) & unknown_clusters(clusters))
        wait = max([termination_grace(clusters.get(name)) + SPANNING_SLACK for name in cut_off], default=0.0)
        note = {"generation": generation, "clusters": list(verdict.failed), "unknown": cut_off,
                "reason": verdict.message}
        await self._cancelled(job, rb, generation, shares, verdict,
                              extra={post_release.TORN_DOWN: json.dumps(note, sort_keys=True)}, min_delay=wait)
        await self._event(job, "TornDown", f"generation {generation}: {verdict.message}; every share withdrawn"
                                           + (f", the next attempt waits {wait:.0f}s for the cut-off shares to stop"
                                              if wait else ""), "Warning")
