"""What the demo (and the e2e suite) sees of the system, read only through the API.

:func:`snapshot` lists Clusters, Jobs, JobFlows and Works into plain views: each job with its
per-cluster shares (taken from the Works of its current placement generation: replicas and
``minAvailable`` per task, running/succeeded pods, the two-phase gang phase). :class:`Timeline`
turns successive snapshots into the moments each job was placed, released, started and finished.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from policies.k8s.timestamps import instant
from policies.kinds import resolve
from policies.models.karmada_work import JOB_LABEL, status_is_current

if TYPE_CHECKING:
    from federation.client import ResourceClient

WORK_NS_PREFIX = "karmada-es-"
RELEASED_GANG = {"Released", "Running"}


@dataclass
class ClusterView:
    name: str
    ready: str  # "True" / "False" / "Unknown"
    gpus_used: int
    gpus_total: int
    taints: list[str] = field(default_factory=list)


@dataclass
class Share:
    """One cluster's part of a job: what its Work asks for and what the agent reports."""

    cluster: str
    generation: int
    replicas: int
    min_available: int
    tasks: dict[str, tuple[int, int]]  # task -> (replicas, minAvailable)
    running: int
    succeeded: int
    phase: str  # the share's Volcano Job phase as the agent reports it
    gang: str  # two-phase start phase ("" when the share is not held)
    hold: bool


@dataclass
class JobView:
    kind: str  # Job / JobFlow
    name: str
    phase: str
    created: float
    shares: list[Share] = field(default_factory=list)
    reason: str = ""
    owner: str = ""  # JobFlow that created this Job, if any
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def running(self) -> int:
        return sum(s.running for s in self.shares)

    @property
    def succeeded(self) -> int:
        return sum(s.succeeded for s in self.shares)

    @property
    def total(self) -> int:
        return sum(s.replicas for s in self.shares)

    @property
    def released(self) -> bool:
        """Every share may bind: released after a reservation, or never held."""
        return bool(self.shares) and all(s.gang in RELEASED_GANG or not s.hold for s in self.shares)


@dataclass
class Snapshot:
    at: float
    clusters: list[ClusterView]
    jobs: dict[tuple[str, str], JobView]


def parse_time(text: Optional[str]) -> float:
    moment = instant(text)
    return moment.timestamp() if moment is not None else 0.0


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def cluster_view(obj: dict[str, Any]) -> ClusterView:
    status = obj.get("status") or {}
    ready = next((c.get("status", "Unknown") for c in status.get("conditions") or [] if c.get("type") == "Ready"),
                 "Unknown")
    gpus = status.get("gpus") or []
    total = sum(_int(g.get("total")) for g in gpus)
    free = sum(_int(g.get("free")) for g in gpus)
    taints = [f"{t.get('key')}:{t.get('effect')}" for t in (obj.get("spec") or {}).get("taints") or []]
    return ClusterView(obj["metadata"]["name"], str(ready), total - free, total, taints)


def share_of(work: dict[str, Any]) -> Optional[Share]:
    spec = work.get("spec") or {}
    placement = spec.get("placement") or {}
    if placement.get("cancelled"):
        return None
    manifests = (spec.get("workload") or {}).get("manifests") or []
    if not manifests:
        return None
    job_spec = manifests[0].get("spec") or {}
    tasks = {str(t.get("name") or f"task{i}"): (_int(t.get("replicas")), _int(t.get("minAvailable", t.get("replicas"))))
             for i, t in enumerate(job_spec.get("tasks") or [])}
    # a status the agent wrote for an older placement generation says nothing about this one
    status = (work.get("status") or {}) if status_is_current(work) else {}
    first: dict[str, Any] = next(iter(status.get("manifestStatuses") or []), {})
    reported = first.get("status") or {}
    gang = status.get("gang") or {}
    generation = _int(placement.get("generation"))
    return Share(
        cluster=work["metadata"]["namespace"].removeprefix(WORK_NS_PREFIX),
        generation=generation,
        replicas=sum(r for r, _ in tasks.values()),
        min_available=_int(job_spec.get("minAvailable")) or sum(m for _, m in tasks.values()),
        tasks=tasks,
        running=_int(reported.get("running")),
        succeeded=_int(reported.get("succeeded")),
        phase=str((reported.get("state") or {}).get("phase") or ""),
        gang=str(gang.get("phase") or "") if _int(gang.get("generation")) in (0, generation) else "",
        hold=_int(placement.get("clusters", 1)) > 1,
    )


def shares_by_job(works: list[dict[str, Any]]) -> dict[str, list[Share]]:
    """``ns.name`` -> the shares of the job's newest placement generation, by cluster name."""
    grouped: dict[str, list[Share]] = {}
    for work in works:
        md = work.get("metadata") or {}
        if not md.get("namespace", "").startswith(WORK_NS_PREFIX) or md.get("deletionTimestamp"):
            continue
        job = (md.get("labels") or {}).get(JOB_LABEL) or md.get("name", "")
        share = share_of(work)
        if share is not None:
            grouped.setdefault(job, []).append(share)
    for job, shares in grouped.items():
        newest = max(s.generation for s in shares)
        grouped[job] = sorted((s for s in shares if s.generation == newest), key=lambda s: s.cluster)
    return grouped


def derived_phase(shares: list[Share]) -> str:
    """A phase from the shares alone, for a federated Job whose status nobody has written yet."""
    if not shares:
        return "Pending"
    phases = {s.phase for s in shares}
    if phases == {"Completed"}:
        return "Completed"
    if "Failed" in phases:
        return "Failed"
    return "Running" if any(s.running for s in shares) else "Pending"


def _reason(obj: dict[str, Any]) -> str:
    status = obj.get("status") or {}
    state = status.get("state") or {}
    if state.get("message") or state.get("reason"):
        return str(state.get("message") or state.get("reason"))
    conditions = status.get("conditions") or []
    for cond in conditions if isinstance(conditions, list) else []:  # a JobFlow's conditions are a map
        if isinstance(cond, dict) and cond.get("status") in ("False", False) and cond.get("message"):
            return str(cond["message"])
    return ""


async def snapshot(rc: "ResourceClient", namespace: str = "default") -> Snapshot:
    clusters, jobs, flows, works = await asyncio.gather(
        rc.list(resolve("clusters")), rc.list(resolve("jobs"), namespace), rc.list(resolve("jobflows"), namespace),
        rc.list(resolve("works")))
    shares = shares_by_job(works.get("items") or [])
    views: dict[tuple[str, str], JobView] = {}
    for job in jobs.get("items") or []:
        md = job["metadata"]
        mine = shares.get(f"{md.get('namespace', namespace)}.{md['name']}", [])
        phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or derived_phase(mine))
        owner = next((o.get("name", "") for o in md.get("ownerReferences") or [] if o.get("kind") == "JobFlow"), "")
        views[("Job", md["name"])] = JobView("Job", md["name"], phase, parse_time(md.get("creationTimestamp")), mine,
                                             _reason(job), owner, job.get("status") or {})
    for flow in flows.get("items") or []:
        md = flow["metadata"]
        phase = str(((flow.get("status") or {}).get("state") or {}).get("phase") or "Pending")
        views[("JobFlow", md["name"])] = JobView("JobFlow", md["name"], phase, parse_time(md.get("creationTimestamp")),
                                                 [], _reason(flow), "", flow.get("status") or {})
    return Snapshot(time.time(), sorted((cluster_view(c) for c in clusters.get("items") or []), key=lambda c: c.name),
                    views)


@dataclass
class Moments:
    """When one job got where (epoch seconds; 0 = not yet)."""

    submitted: float = 0.0
    placed: float = 0.0  # first Work of its placement seen
    released: float = 0.0  # every share may bind (after the two-phase reservation when held)
    running: float = 0.0  # first pod running
    finished: float = 0.0  # reached a terminal phase
    phase: str = ""
    held: bool = False
    shares: list[Share] = field(default_factory=list)  # the placement it finished on

    def span(self, start: float, end: float) -> Optional[float]:
        return end - start if start and end and end >= start else None


@dataclass
class Timeline:
    """First time each job was seen placed / released / running / finished, across snapshots."""

    jobs: dict[tuple[str, str], Moments] = field(default_factory=dict)

    def submitted(self, key: tuple[str, str], at: float) -> None:
        self.jobs.setdefault(key, Moments()).submitted = at

    def observe(self, snap: Snapshot, terminal: set[str]) -> None:
        for key, view in snap.jobs.items():
            m = self.jobs.setdefault(key, Moments())
            if not m.submitted:
                m.submitted = view.created or snap.at
            m.phase = view.phase
            if view.shares:
                m.shares = view.shares
                m.held = m.held or any(s.hold for s in view.shares)
                m.placed = m.placed or snap.at
                if view.released and not m.released:
                    m.released = snap.at
            if (view.running or view.phase == "Running") and not m.running:
                m.running = snap.at
            if view.phase in terminal and not m.finished:
                m.finished = snap.at
                m.running = m.running or snap.at
                m.released = m.released or m.running
                m.placed = m.placed or m.released


async def wait_clusters_ready(rc: "ResourceClient", names: list[str], timeout: float) -> list[ClusterView]:
    """Poll until every named Cluster reports Ready True; TimeoutError names the ones that did not."""
    deadline = time.monotonic() + timeout
    views: dict[str, ClusterView] = {}
    while True:
        listed = await rc.list(resolve("clusters"))
        views = {c.name: c for c in (cluster_view(o) for o in listed.get("items") or [])}
        missing = [n for n in names if n not in views or views[n].ready != "True"]
        if not missing:
            return [views[n] for n in names]
        if time.monotonic() > deadline:
            states = ", ".join(f"{n}: {views[n].ready if n in views else 'not registered'}" for n in missing)
            raise TimeoutError(f"clusters not Ready within {timeout:.0f}s ({states})")
        await asyncio.sleep(0.2)
