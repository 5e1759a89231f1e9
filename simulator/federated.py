"""Several member clusters: each job divided by the federation's own placement, gangs started in two phases.

What runs is the federation's code: each member's ``Cluster.status`` is what its agent would
report (:func:`policies.capacity_summary.cluster_status` over its nodes and the pods bound or
reserved there); a job becomes a placement request (:func:`~federation.placement.adapters.build_request`
with the ``--policy`` PropagationPolicy) that :meth:`~federation.placement.place.Placer.place`
divides; each cluster's share is rendered as dispatch renders a Work
(:func:`~federation.controllers.render.share_manifest`). A job split over several clusters is
a cross-cluster gang: its shares are submitted held (``hold: true``), each member reserves its
share's pods, and once every share is Reserved all are released at the same tick (the
federation's two-phase start); a share whose reservation expired cancels the whole placement
and the job goes back to the federation's queue, as the placement controller does.

A job the placement cannot divide on the clusters' free capacity waits in the federation's
queue (FIFO) and is tried again after each tick in which a pod ended; a job that does not fit
even on empty clusters is Unfittable (with the placement's reason).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import yaml

from federation.controllers.binding import placement_json
from federation.controllers.render import share_manifest
from federation.placement.adapters import assumed_share, build_request, cluster_state
from federation.placement.place import Placer
from federation.placement.request import ClusterState
from member_agent.pod_writes import with_placement
from member_agent.topology_status import cluster_topology
from policies.capacity import NodeState, pod_request
from policies.capacity_summary import cluster_status
from policies.errors import InvalidConfiguration
from simulator.clock import VirtualClock
from simulator.member import Member, Obj
from simulator.trace import TraceJob

Shares = list[tuple[Member, dict, bool]]


def load_policy(path: str) -> Obj:
    try:
        with open(path, encoding="utf-8") as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidConfiguration(f"policy {path}: {exc}") from exc
    policies = [d for d in docs if isinstance(d, dict) and d.get("kind") in ("PropagationPolicy",
                                                                             "ClusterPropagationPolicy")]
    if len(policies) != 1:
        raise InvalidConfiguration(f"policy {path}: want exactly one PropagationPolicy, found {len(policies)}")
    if not ((policies[0].get("spec") or {}).get("placement")):
        raise InvalidConfiguration(f"policy {path}: spec.placement is required")
    return dict(policies[0])


class Federation:
    """The federation's division of jobs over ``members`` and its two-phase start of gangs."""

    def __init__(self, members: list[Member], policy_path: Optional[str], clock: VirtualClock) -> None:
        self.members = {m.name: m for m in members}
        self.policy = load_policy(policy_path) if policy_path else {
            "kind": "PropagationPolicy", "metadata": {"name": "whole"},
            "spec": {"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                         "replicaDivisionPreference": "Aggregated"}}}}
        self.clock = clock
        self.placer = Placer()
        self.backlog: list[tuple[TraceJob, dict]] = []
        self.held: dict[str, list[Member]] = {}  # job -> members holding its shares
        self.generation: dict[str, int] = {}
        self.placed: list[tuple[TraceJob, Shares]] = []  # placed from the backlog this tick
        self.cross_cluster = 0  # jobs whose shares spanned several clusters
        self._empty = {m.name: self._cluster(m, empty=True) for m in members}
        self._seen_finishes = 0
        self._jobs: dict[str, tuple[TraceJob, dict]] = {}
        #: shares dispatched whose pods are not yet bound or reserved: deducted from later placements
        #: (the placement controller's assumed workloads), or two jobs placed in one tick would
        #: both count on the same free GPUs
        self._assumed: dict[str, tuple[Any, ...]] = {}
        #: jobs placed this tick whose shares the replay has not handed to the members yet: their assumed
        #: shares stay (without this, a second job placed in the same tick counted on the first's room)
        self._unsubmitted: set[str] = set()
        self._statuses: dict[str, tuple[Any, Obj]] = {}  # member -> (its status_signature, its Cluster)
        self._pod_requests: dict[str, dict[str, float]] = {}  # pod uid -> its request (see _requests_of)
        self._cluster_states: dict[int, tuple[Obj, ClusterState]] = {}  # see _states_of
        self._state_tuples: dict[tuple[int, ...], tuple[list[Obj], tuple[ClusterState, ...]]] = {}

    # ------------------------------------------------------------------ cluster status
    def _cluster(self, member: Member, empty: bool = False) -> Obj:
        if not empty:  # walking every pod is the replay's dearest step: only when a pod or reservation moved
            signature = member.status_signature()
            cached = self._statuses.get(member.name)
            if cached is not None and cached[0] == signature:
                return cached[1]
            obj = self._status_of(member, self._pods(member))
            self._statuses[member.name] = (signature, obj)
            return obj
        return self._status_of(member, [])

    def _status_of(self, member: Member, pods: list[Obj]) -> Obj:
        requests = self._requests_of(pods)
        state = NodeState(member.nodes, pods, requests)
        status = cluster_status(state, pods, requests=requests)
        status["topology"] = cluster_topology(state, member.hyper_nodes)  # the fleet tier (docs/topology.md)
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2023-01-01T00:00:00Z"}]
        return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": member.name}, "spec": {}, "status": status}

    def _requests_of(self, pods: list[Obj]) -> dict[str, dict[str, float]]:
        """uid -> the pod's request, each pod's parsed once: a pod's spec never changes and its uid names one
        generation of one share (a re-placed job gets new uids), while the status is rebuilt whenever any pod moves."""
        out = {}
        for pod in pods:
            uid = (pod.get("metadata") or {}).get("uid", "")
            if not uid:  # cannot be memoised: cluster_status parses it itself
                continue
            request = self._pod_requests.get(uid)
            if request is None:
                request = self._pod_requests[uid] = pod_request(pod)
            out[uid] = request
        return out

    @staticmethod
    def _pods(member: Member) -> list[Obj]:
        """Pods holding resources: bound and not finished, or reserved for a held gang."""
        out = []
        for share in member.shares.values():
            for name, pod in share.pods.items():
                node = share.gang.reservations.get(f"sim/{name}")
                if node is not None:
                    out.append(with_placement(pod, node, None))
                elif (pod.get("spec") or {}).get("nodeName") and pod["status"].get("phase") == "Running":
                    out.append(pod)
        return out

    # ------------------------------------------------------------------ division
    def divide(self, job: TraceJob, manifest: dict) -> Shares | str:
        """The job's shares now, [] when it waits in the federation's queue, or why it never fits."""
        self._jobs[job.name] = (job, manifest)
        on_empty = self._place(manifest, list(self._empty.values()))
        if not on_empty.ok:
            return f"the federation cannot divide it even over empty clusters: {on_empty.reason}"
        shares = self._try(job, manifest)
        if shares is None:
            self.backlog.append((job, manifest))
            return []
        return shares

    def _place(self, manifest: dict, clusters: list[Obj], assumed: tuple[Any, ...] = ()) -> Any:
        states = self._states_of(clusters)
        request = build_request(manifest, self.policy, states, now=self.clock.now(), assumed=assumed)
        request = dataclasses.replace(request, clusters=states)  # the same tuple: the placer's table cache hits
        self._demand = request.job
        return self.placer.place(request)

    def _states_of(self, clusters: list[Obj]) -> tuple[ClusterState, ...]:
        """The placement's view of these Cluster objects, parsed once per object and, for the same objects,
        the very same tuple (a Cluster object is rebuilt, never changed, when its member's pods move)."""
        key = tuple(id(c) for c in clusters)
        hit = self._state_tuples.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], clusters, strict=True)):
            return hit[1]
        states = []
        for cluster in clusters:
            known = self._cluster_states.get(id(cluster))
            if known is None or known[0] is not cluster:
                known = self._cluster_states[id(cluster)] = (cluster, cluster_state(cluster))
            states.append(known[1])
        if len(self._cluster_states) > 64:  # old statuses are dropped; keep the memo small
            self._cluster_states = {id(c): self._cluster_states[id(c)] for c in clusters}
        if len(self._state_tuples) > 16:
            self._state_tuples.clear()
        self._state_tuples[key] = (list(clusters), tuple(states))
        return self._state_tuples[key][1]

    def _settle_assumed(self) -> tuple[Any, ...]:
        """Assumed shares of jobs whose every share is now bound or reserved (or gone) are dropped."""
        for job in list(self._assumed):
            if job in self._unsubmitted:
                continue
            shares = [m.shares.get(job) for m in self.members.values() if job in m.shares]
            if all(s.started is not None or s.gang.phase == "Reserved" or s.gang.released for s in shares if s):
                del self._assumed[job]
        return tuple(a for entries in self._assumed.values() for a in entries)

    def _try(self, job: TraceJob, manifest: dict, clusters: Optional[list[Obj]] = None) -> Optional[Shares]:
        """``clusters``: the members' status when the caller already built it this tick (it changes only
        when pods are bound, end or are evicted; dispatched shares count through ``_assumed``)."""
        if clusters is None:
            clusters = [self._cluster(m) for m in self.members.values()]
        decision = self._place(manifest, clusters, self._settle_assumed())
        if not decision.ok:
            return None
        self._unsubmitted.add(job.name)
        self._assumed[job.name] = tuple(assumed_share(name, self._demand, {t: ts.replicas for t, ts in share.tasks.items()})
                                        for name, share in decision.shares.items() if share.replicas > 0)
        generation = self.generation[job.name] = self.generation.get(job.name, 0) + 1
        placement = placement_json(decision, manifest, generation)
        used = [(name, entry) for name, entry in sorted(placement["clusters"].items())
                if int(entry.get("replicas") or 0) > 0]
        multi = len(used) > 1
        shares: Shares = []
        for name, entry in used:
            rendered = share_manifest(manifest, entry, placement["totals"], generation)
            rendered["metadata"]["uid"] = f"{manifest['metadata']['uid']}-g{generation}"
            shares.append((self.members[name], rendered, multi))
        if multi:
            self.cross_cluster += 1
            self.held[job.name] = [m for m, _, _ in shares]
        return shares

    # ------------------------------------------------------------------ two-phase start
    def release(self, now: float) -> list[tuple[TraceJob, Shares]]:
        """Release gangs whose every share is reserved; re-queue those with an expired share; place
        queued jobs when pods ended since the last try. Returns the jobs placed from the queue."""
        self._unsubmitted.clear()  # what earlier ticks placed is on its members now
        for job, members in sorted(self.held.items()):
            gangs = [m.shares[job].gang for m in members if job in m.shares]
            if len(gangs) != len(members) or any(g.expired for g in gangs):
                for member in members:
                    member.cancel(job)
                del self.held[job]
                self._assumed.pop(job, None)
                self._seen_finishes = -1  # try the queue again this tick
                self.backlog.insert(0, (self._trace_job(job), self._manifest(job)))
            elif all(g.phase == "Reserved" for g in gangs):
                for member in members:
                    member.release(job)
                del self.held[job]
        placed: list[tuple[TraceJob, Shares]] = []
        finishes = sum(m.finished_pods for m in self.members.values())
        if self.backlog and finishes != self._seen_finishes:
            self._seen_finishes = finishes
            waiting, self.backlog = self.backlog, []
            for job, manifest in waiting:
                shares = self._try(job, manifest)
                if shares is None:
                    self.backlog.append((job, manifest))
                else:
                    placed.append((job, shares))
        return placed

    def _trace_job(self, name: str) -> TraceJob:
        return self._jobs[name][0]

    def _manifest(self, name: str) -> dict:
        return self._jobs[name][1]
