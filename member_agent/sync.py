"""The agent ⇄ federation sync: the only place in the agent that retries (tenacity, jittered).

* :meth:`FederationSync.register` creates the ``Cluster`` if it does not exist (``syncMode: Pull``);
* :meth:`lease_loop` renews ``Lease karmada-cluster/<cluster>`` every 10 s (duration 40 s),
  replacing with the resourceVersion it read, as Kubernetes leader election does;
* :meth:`status_loop` publishes the Cluster status (capacity, node shapes, GPUs, NUMA, queues)
  when it changes: woken by the agent's change counter (:mod:`member_agent.changes`: the cluster
  cache, the Works, a session's writes), debounced by ``status_period`` so a burst of pod events
  is one report, never recomputed while nothing changed; and at least every ``status_heartbeat``;
* :meth:`works_loop` lists the Works of ``karmada-es-<cluster>`` then watches from the list's
  resourceVersion; a 410 (or any broken watch) means list again, and Works missing from a
  new list are forgotten;
* :meth:`work_status_loop` writes each Work's status when the agent's view of it changed;
* :meth:`inputs_loop` lists Queues and PriorityClasses for the scheduler.

A call that still fails after its retries is logged and counted
(``caldera_agent_sync_errors_total``); the loop carries on at its next period.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from typing import Awaitable, Callable, Optional, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from member_agent.agent import Agent
from member_agent.changes import first_of
from member_agent.cluster.clock import Clock, rfc3339
from member_agent.cluster.gateway import AlreadyExists, Gone, NotFound, Obj, Unavailable
from member_agent.federation_api import LEASE_NAMESPACE, FederationAPI
from member_agent.works import comparable
from policies.cluster_report import cluster_registration, ready_condition
from policies.errors import Conflict, TemporaryError
from policies.models.karmada_work import execution_namespace

log = logging.getLogger("caldera.agent.sync")
T = TypeVar("T")
GANG_KEYS = ("generation", "phase", "reservedUntil", "reason")


def share_phase(status: Optional[Obj]) -> tuple[object, object]:
    """A Work status's gang phase and its job's phase (what confirms a share to the federation)."""
    status = status or {}
    manifests = status.get("manifestStatuses") or [{}]
    job = ((manifests[0] or {}).get("status") or {}).get("state") or {}
    return (status.get("gang") or {}).get("phase"), job.get("phase")


def micro_time(epoch: float) -> str:
    """Kubernetes ``MicroTime`` text (Lease ``renewTime``)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FederationSync:
    def __init__(self, agent: Agent, api: FederationAPI, clock: Clock, *, lease_period: float = 10.0,
                 lease_duration: int = 40, status_period: float = 0.5, status_heartbeat: float = 30.0,
                 inputs_period: float = 5.0, attempts: int = 5, status_settle: float = 0.05) -> None:
        self.agent = agent
        self.api = api
        self.clock = clock
        self.cluster = agent.options.cluster
        self.namespace = execution_namespace(self.cluster)
        self.lease_period = lease_period
        self.lease_duration = lease_duration
        self.status_period = status_period
        self.status_heartbeat = status_heartbeat
        #: how long a change waits for the rest of its burst (e.g. a gang's pods ending together)
        self.status_settle = status_settle
        self.inputs_period = inputs_period
        self.attempts = attempts
        self.lease_renewals = 0
        self.status_writes = 0
        self.connected = False
        self._published: Optional[str] = None
        self._published_at = 0.0
        self._publishing = asyncio.Lock()
        self._ready_since = rfc3339(clock.now())

    # ------------------------------------------------------------------ retries
    async def call(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()`` retried on temporary failures with jittered exponential backoff on the agent clock."""
        retrying = AsyncRetrying(
            retry=retry_if_exception_type((Unavailable, TemporaryError)),
            wait=wait_random_exponential(multiplier=0.2, max=5.0),
            stop=stop_after_attempt(self.attempts),
            sleep=self.clock.sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    result = await fn()
            self.connected = True
            return result
        except (Unavailable, TemporaryError):
            self.connected = False
            self.agent.metrics.sync_errors.labels(operation).inc()
            raise

    # ------------------------------------------------------------------ Cluster
    def cluster_object(self) -> Obj:
        return cluster_registration(self.cluster, self.agent.options.cluster_spec)

    async def register(self) -> None:
        try:
            await self.call("get_cluster", lambda: self.api.get_cluster(self.cluster))
            log.info("Cluster %s already registered", self.cluster)
        except NotFound:
            try:
                await self.call("create_cluster", lambda: self.api.create_cluster(self.cluster_object()))
                log.info("Registered Cluster %s", self.cluster)
            except AlreadyExists:
                pass

    def cluster_status(self) -> Obj:
        status = self.agent.cluster_status()
        # stamped once: Ready has held since this agent first reported it, and the federation's
        # readiness damping counts from here (restamping every publish would never let it pass)
        status["conditions"] = [ready_condition(self._ready_since)]
        if self.agent.fence is not None:
            status["fence"] = self.agent.fence.report()  # the federation checks it against its graces
        return status

    async def publish_status(self, force: bool = False) -> bool:
        # one publish at a time, each computed once the previous one is written: a report computed
        # before a binding never lands after one computed since
        async with self._publishing:
            status = self.cluster_status()
            text = comparable(status)
            now = self.clock.monotonic()
            if not force and text == self._published and now - self._published_at < self.status_heartbeat:
                return False
            await self.call("cluster_status", lambda: self.api.patch_cluster_status(self.cluster, status))
            self._published, self._published_at = text, now
            self.status_writes += 1
            return True

    async def status_loop(self) -> None:
        changed = self.agent.changes.subscribe()
        seen = -1
        while True:
            due = self.clock.monotonic() - self._published_at >= self.status_heartbeat
            if self.agent.changes.version != seen or due or self._published is None:
                changed.clear()
                seen = self.agent.changes.version
                try:
                    await self.publish_status()
                except Exception as exc:  # noqa: BLE001
                    log.warning("publishing Cluster %s status failed: %s", self.cluster, exc)
                    seen = -1  # try again after the debounce
            left = self.status_heartbeat - (self.clock.monotonic() - self._published_at)
            if seen == self.agent.changes.version:
                await first_of(changed.wait(), self.clock.sleep(max(0.0, left)))
            # Debounce with a leading edge: a change after a quiet spell is reported once its burst
            # has settled (capacity freed reaches the federation at once, not a period later);
            # reports never come closer together than status_period.
            since = self.clock.monotonic() - self._published_at
            await self.clock.sleep(max(self.status_settle, self.status_period - since))

    # ------------------------------------------------------------------ Lease
    async def renew_lease(self) -> None:
        started = self.clock.monotonic()  # the fence counts from the start of the last successful renewal
        now = self.clock.now()
        await self._renew_lease(now)
        if self.agent.fence is not None:
            self.agent.fence.renewed(started, now)

    async def learn_failover_timing(self) -> None:
        """Read the graces the federation published on our Cluster (``status.failoverTiming``)."""
        if self.agent.fence is None:
            return
        before = self.agent.fence.report()
        try:
            self.agent.fence.learn(await self.call("get_cluster", lambda: self.api.get_cluster(self.cluster)))
        except Exception as exc:  # noqa: BLE001 - the graces last read (or the defaults) stay in force
            log.debug("reading Cluster %s for the federation's graces failed: %s", self.cluster, exc)
        if self.agent.fence.report() != before:
            self.agent.changes.bump()  # the new fence goes out now, not at the next status heartbeat

    async def _renew_lease(self, now: float) -> None:
        try:
            lease = await self.call("get_lease", lambda: self.api.get_lease(LEASE_NAMESPACE, self.cluster))
        except NotFound:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.cluster, "namespace": LEASE_NAMESPACE},
                    "spec": {"holderIdentity": self.cluster, "leaseDurationSeconds": self.lease_duration,
                             "renewTime": micro_time(now), "acquireTime": micro_time(now)}}
            await self.call("create_lease", lambda: self.api.create_lease(LEASE_NAMESPACE, body))
            self.lease_renewals += 1
            return
        spec = dict(lease.get("spec") or {})
        spec.update({"holderIdentity": self.cluster, "leaseDurationSeconds": self.lease_duration,
                     "renewTime": micro_time(now)})
        lease = dict(lease, spec=spec)
        await self.call("replace_lease", lambda: self.api.replace_lease(LEASE_NAMESPACE, self.cluster, lease))
        self.lease_renewals += 1

    async def lease_loop(self) -> None:
        while True:
            try:
                await self.renew_lease()
                await self.learn_failover_timing()
                await self.save_fence()
            except Conflict:
                await self.clock.sleep(0.2)  # changed between our read and write: read again soon
                continue
            except Exception as exc:  # noqa: BLE001
                log.warning("renewing Lease %s/%s failed: %s", LEASE_NAMESPACE, self.cluster, exc)
            await self.clock.sleep(self.lease_period)

    # ------------------------------------------------------------------ Works
    async def list_works(self) -> str:
        items, resource_version = await self.call("list_works", lambda: self.api.list_works(self.namespace))
        for work in items:
            self.agent.apply_work(work)
        self.agent.prune_works({f"{w['metadata']['namespace']}/{w['metadata']['name']}" for w in items})
        return resource_version

    async def works_loop(self) -> None:
        resource_version: Optional[str] = None
        while True:
            try:
                if resource_version is None:
                    resource_version = await self.list_works()
                async for event in self.api.watch_works(self.namespace, resource_version):
                    md = event.object.get("metadata") or {}
                    resource_version = str(md.get("resourceVersion") or resource_version)
                    if event.type == "DELETED":
                        self.agent.forget_work(f"{md.get('namespace')}/{md.get('name')}")
                    else:
                        self.agent.apply_work(event.object)
            except Gone:
                log.info("Works watch in %s expired (410); listing again", self.namespace)
                resource_version = None
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                log.warning("Works watch in %s failed: %s; listing again", self.namespace, exc)
                resource_version = None
                await self.clock.sleep(1.0)

    async def write_work_statuses(self) -> int:
        written = 0
        phase_changed = False
        for state, status in self.agent.pending_statuses():
            body = json.loads(json.dumps(status))
            gang = body.get("gang")
            if isinstance(gang, dict):
                for key in GANG_KEYS:
                    gang.setdefault(key, None)  # merge patch: absent keys must be cleared explicitly
            record = state.record
            try:
                await self.call("work_status", lambda r=record, b=body: self.api.patch_work_status(r.namespace, r.name, b))
            except NotFound:
                self.agent.forget_work(record.key)
                continue
            except Exception as exc:  # noqa: BLE001
                log.warning("writing Work %s status failed: %s", record.key, exc)
                continue
            phase_changed = phase_changed or share_phase(state.written) != share_phase(status)
            self.agent.status_written(state, status)
            written += 1
        if phase_changed:
            await self.publish_after_phases()
        return written

    async def publish_after_phases(self) -> None:
        """A share's phase changed (e.g. its gang bound and Running): publish the Cluster status now,
        after that Work status, even if unchanged. The federation keeps deducting a share it placed
        until the Cluster reports capacity written after the Work that confirms it (docs/protocol.md
        "Assumed shares"); waiting for the debounced status loop, or for the heartbeat when the
        capacity was already reported, would hold that capacity back for nothing."""
        try:
            await self.publish_status(force=True)
        except Exception as exc:  # noqa: BLE001 - the status loop publishes it later
            log.warning("publishing Cluster %s status after a share's phase changed failed: %s", self.cluster, exc)

    async def write_events(self) -> int:
        """Record the queued Job events in the federation (best effort, never retried)."""
        written = 0
        for body in self.agent.take_federation_events():
            try:
                await self.api.create_event(body["metadata"]["namespace"], body)
                written += 1
            except Exception as exc:  # noqa: BLE001 - events are best effort
                log.debug("event %s not recorded in the federation: %s", body.get("reason"), exc)
        return written

    async def work_status_loop(self) -> None:
        while True:
            self.agent.status_changed.clear()
            await self.write_work_statuses()
            await self.write_events()
            await first_of(self.agent.status_changed.wait(), self.clock.sleep(2.0))
            await self.clock.sleep(0.1)

    # ------------------------------------------------------------------ scheduler inputs
    async def refresh_inputs(self) -> None:
        queues = await self.call("list_queues", self.api.list_queues)
        try:
            classes = await self.call("list_priority_classes", self.api.list_priority_classes)
        except NotFound:
            classes = []
        self.agent.set_scheduling_inputs(queues, classes)

    async def inputs_loop(self) -> None:
        while True:
            try:
                await self.refresh_inputs()
            except Exception as exc:  # noqa: BLE001
                log.debug("listing Queues/PriorityClasses failed: %s", exc)
            await self.clock.sleep(self.inputs_period)

    async def resume_fence(self) -> None:
        """The sync starts (a restart, a standby just elected): the fence resumes from the record
        persisted in the member cluster, or counts from now when there is none."""
        fence, store = self.agent.fence, self.agent.fence_store
        if fence is None:
            return
        record = None
        if store is not None:
            try:
                record = await store.load()
            except Exception as exc:  # noqa: BLE001 - an unreadable record restores nothing
                log.warning("reading the fence record failed: %s; the fence counts from now", exc)
        if record is not None and fence.restore(record):
            log.info("fence resumed: last renewal %s, %.1fs ago", record.get("lastRenewal"), fence.unreachable_for())
        else:
            fence.restart()

    async def save_fence(self) -> None:
        """Persist the fence's record after a renewal (best effort: the next renewal tries again)."""
        fence, store = self.agent.fence, self.agent.fence_store
        if fence is None or store is None:
            return
        try:
            await store.save(fence.record())
        except Exception as exc:  # noqa: BLE001
            log.warning("saving the fence record failed: %s", exc)

    async def run(self) -> None:
        await self.resume_fence()
        while True:
            try:
                await self.register()
                break
            except Exception as exc:  # noqa: BLE001
                log.warning("registering Cluster %s failed: %s; retrying", self.cluster, exc)
                await self.clock.sleep(2.0)
        try:
            await asyncio.gather(self.lease_loop(), self.status_loop(), self.works_loop(), self.work_status_loop(),
                                 self.inputs_loop())
        finally:
            self.connected = False  # stopped (e.g. stepped down): not talking to the federation
