"""Leader election for the controller manager, on a coordination.k8s.io/v1 Lease (client-go's rules).

Several ``caldera serve`` / ``caldera controllers`` replicas campaign for the Lease
``caldera-system/caldera-controllers``; the holder runs the controllers, the others wait.

* A candidate takes the Lease when it is absent, released (empty holder), or when the record it
  last observed has not changed for ``lease_duration`` seconds of *its own* monotonic clock (no
  clock agreement between machines is needed, as in client-go), counted from when its read
  returned, while a leader counts its own renewal from before its read: so the two-second gap
  between renew deadline and lease duration holds however slow the reads are.
* The leader renews every ``retry_period``; when it has not renewed successfully for
  ``renew_deadline`` it steps down at once (the controllers are stopped) and campaigns again. A
  leader that was paused (SIGSTOP) longer than that notices the gap when it runs again and steps
  down before renewing. Every Lease write carries the resourceVersion it was computed from, so two
  candidates can never both succeed.
* On a clean stop the leader releases the Lease (holder emptied), so another replica takes over
  after one retry period instead of a lease duration.

What a deposed leader may still write before it notices is fenced by the API itself: the
controllers' writes carry the resourceVersion (and Works their placement generation) they were
computed from (docs/federation-controllers.md).

:func:`leader_gate` adapts an :class:`LeaderElector` to the controller manager's ``gate``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client as k8s

from federation import metrics
from federation.controllers.manager import Gate, Lead

log = logging.getLogger("caldera.controllers.leader")

LEASE_NAMESPACE = "caldera-system"
LEASE_NAME = "caldera-controllers"


def default_identity() -> str:
    """``hostname_<random>``, as kube-controller-manager makes it (unique per process)."""
    return f"{socket.gethostname()}_{secrets.token_hex(8)}"


@dataclass
class ElectionConfig:
    identity: str = field(default_factory=default_identity)
    namespace: str = LEASE_NAMESPACE
    name: str = LEASE_NAME
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: seconds, monotonic (injected so tests can drive time)
    clock: Callable[[], float] = time.monotonic

    def check(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
        if not self.renew_deadline > self.retry_period * 1.2:
            raise ValueError("--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period")
        if self.retry_period <= 0:
            raise ValueError("--leader-elect-retry-period must be positive")
        if not self.identity:
            raise ValueError("--leader-elect-identity must not be empty")


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for one Lease through the API (``api``: a kubernetes-asyncio ApiClient)."""

    def __init__(self, api: Any, config: ElectionConfig) -> None:
        config.check()
        self.config = config
        self.coordination = k8s.CoordinationV1Api(api)
        #: the holder identity last seen on the Lease ("" when free or unknown)
        self.leader = ""
        self.is_leader = False
        self.transitions = 0
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0
        #: set by :meth:`leading_now` once the renew deadline has passed; the campaign steps down on it
        self._deposed = False

    # -- one attempt ---------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        cfg = self.config
        # Our own lease is counted from before the read (the earliest our write can land), a rival's
        # from after it (the latest its record can have been written): a slow read on a loaded
        # machine then only widens the gap between the old leader's renew deadline and our takeover,
        # never closes it.
        started = cfg.clock()
        try:
            lease = await self.coordination.read_namespaced_lease(cfg.name, cfg.namespace)
        except k8s.ApiException as err:
            if err.status != 404:
                log.warning("cannot read Lease %s/%s: %s", cfg.namespace, cfg.name, err.reason)
                return False
            return await self._create(started)
        now = cfg.clock()
        spec = lease.spec.to_dict() if lease.spec is not None else {}
        record = {k: spec.get(k) for k in ("holder_identity", "lease_duration_seconds", "renew_time",
                                           "acquire_time", "lease_transitions")}
        if record != self._observed:
            self._observed, self._observed_at = record, now
        holder = record.get("holder_identity") or ""
        self.leader = holder
        duration = float(record.get("lease_duration_seconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and now < self._observed_at + duration:
            return False  # someone else holds a lease that is still running
        transitions = int(record.get("lease_transitions") or 0)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace,
                             "resourceVersion": lease.metadata.resource_version},
                "spec": {"holderIdentity": cfg.identity, "leaseDurationSeconds": int(cfg.lease_duration),
                         "renewTime": _micro_time(),
                         "acquireTime": spec.get("acquire_time").strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                         if holder == cfg.identity and spec.get("acquire_time") else _micro_time(),
                         "leaseTransitions": transitions if holder == cfg.identity else transitions + 1}}
        try:  # the resourceVersion makes this a compare-and-swap: one winner per version
            await self.coordination.replace_namespaced_lease(cfg.name, cfg.namespace, body)
        except k8s.ApiException as err:
            log.info("Lease %s/%s update refused (%s)", cfg.namespace, cfg.name, err.status)
            return False
        self._won(started)
        return True

    async def _create(self, now: float) -> bool:
        cfg = self.config
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {"holderIdentity": cfg.identity, "leaseDurationSeconds": int(cfg.lease_duration),
                         "acquireTime": _micro_time(), "renewTime": _micro_time(), "leaseTransitions": 0}}
        try:
            await self.coordination.create_namespaced_lease(cfg.namespace, body)
        except k8s.ApiException as err:
            if err.status == 404:  # the namespace is missing: make it, then campaign again
                with contextlib.suppress(k8s.ApiException):
                    await k8s.CoreV1Api(self.coordination.api_client).create_namespace(
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cfg.namespace}})
            return False
        self._won(now)
        return True

    def _won(self, now: float) -> None:
        self._renewed_at = now
        self.leader = self.config.identity

    async def release(self) -> None:
        """Give the Lease up (holder emptied) so the next candidate need not wait out the lease."""
        cfg = self.config
        try:
            lease = await self.coordination.read_namespaced_lease(cfg.name, cfg.namespace)
            if lease.spec is None or lease.spec.holder_identity != cfg.identity:
                return
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": cfg.name, "namespace": cfg.namespace,
                                 "resourceVersion": lease.metadata.resource_version},
                    "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro_time(),
                             "leaseTransitions": lease.spec.lease_transitions or 0}}
            await self.coordination.replace_namespaced_lease(cfg.name, cfg.namespace, body)
            log.info("%s released Lease %s/%s", cfg.identity, cfg.namespace, cfg.name)
        except Exception as exc:  # best effort: the lease then simply expires
            log.info("could not release Lease %s/%s: %s", cfg.namespace, cfg.name, exc)

    def leading_now(self) -> bool:
        """Whether this replica leads, judged at this instant from any thread.

        After a SIGSTOP/SIGCONT the process may answer a request (a metrics scrape, ``/status``)
        before the campaign loop runs again: the renew deadline is checked here, on the request
        path, so a leader past it stops reporting itself as leader at once."""
        cfg = self.config
        if self.is_leader and not self._deposed and cfg.clock() - self._renewed_at > cfg.renew_deadline:
            self._deposed = True
            log.warning("%s is past its renew deadline (%.0fs without renewing); no longer reporting itself as "
                        "leader", cfg.identity, cfg.renew_deadline)
        return self.is_leader and not self._deposed

    # -- the campaign --------------------------------------------------------------------

    async def _sleep(self, seconds: float, stop: asyncio.Event) -> bool:
        """Sleep (or return early on stop); True when stopped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
        return stop.is_set()

    async def campaign(self, lead: Lead, stop: asyncio.Event) -> None:
        """Until ``stop``: acquire, lead while renewals succeed, step down, campaign again."""
        cfg = self.config
        self._export()  # a standby says so (0) from the start
        while not stop.is_set():
            if not await self.try_acquire_or_renew():
                jitter = cfg.retry_period * random.uniform(0, 1.2)  # noqa: S311 (not cryptographic)
                if await self._sleep(cfg.retry_period + jitter * 0.5, stop):
                    return
                continue
            self._set_leading(True)
            stop_leading = asyncio.Event()
            leading = asyncio.create_task(lead(stop_leading))
            try:
                await self._renew_until_lost(stop, stop_leading)
            finally:
                # no longer the leader from the moment renewing stopped: said before the controllers
                # wind down, so nobody reads "leader" from a replica that is already stepping down
                self._set_leading(False)
                stop_leading.set()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await leading
            if stop.is_set():
                await self.release()
                return

    async def _renew_until_lost(self, stop: asyncio.Event, stop_leading: asyncio.Event) -> None:
        cfg = self.config
        while not stop.is_set():
            if await self._sleep(cfg.retry_period, stop):
                return
            if self._deposed or cfg.clock() - self._renewed_at > cfg.renew_deadline:
                log.warning("%s did not renew within %.0fs (paused?); stepping down", cfg.identity,
                            cfg.renew_deadline)
                return
            renewed = await self.try_acquire_or_renew()
            if not renewed and cfg.clock() - self._renewed_at > cfg.renew_deadline:
                log.warning("%s failed to renew Lease %s/%s within %.0fs; stepping down", cfg.identity,
                            cfg.namespace, cfg.name, cfg.renew_deadline)
                return
            if not renewed and self.leader and self.leader != cfg.identity:
                log.warning("%s lost Lease %s/%s to %s", cfg.identity, cfg.namespace, cfg.name, self.leader)
                return

    def _set_leading(self, leading: bool) -> None:
        if leading and not self.is_leader:
            self.transitions += 1
            log.info("%s became the leader (Lease %s/%s)", self.config.identity, self.config.namespace,
                     self.config.name)
        self._deposed = False
        self.is_leader = leading
        self._export()

    def _export(self) -> None:
        # read at scrape time: the deadline is judged when the metric is read, not when the loop last ran
        metrics.LEADER.labels(name=self.config.name, identity=self.config.identity).set_function(
            lambda: 1.0 if self.leading_now() else 0.0)


def leader_gate(kubeconfig: dict[str, Any], config: ElectionConfig) -> tuple[Gate, Callable[[], LeaderElector]]:
    """A controller-manager gate that leads only while holding the Lease, and a getter of its elector.

    The elector runs on its own thread and event loop (with its own API client), as client-go renews
    from its own goroutine: CPU-bound controller work on the main loop (a large placement) must not
    delay renewals into a needless step-down. Leading is handed to the main loop; stepping down
    sets the main loop's stop event, and the controllers' late writes meet the API's fencing.
    """
    holder: dict[str, LeaderElector] = {}

    async def gate(lead: Lead, stop: asyncio.Event) -> None:
        main = asyncio.get_running_loop()
        started: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
        thread_stop: dict[str, asyncio.Event] = {}

        async def lead_on_main(stop_leading: asyncio.Event) -> None:  # runs on the elector's loop
            main_stop = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_new_event(), main))
            leading = asyncio.run_coroutine_threadsafe(lead(main_stop), main)
            done = asyncio.wrap_future(leading)
            waiting = asyncio.ensure_future(stop_leading.wait())
            try:
                await asyncio.wait([done, waiting], return_when=asyncio.FIRST_COMPLETED)
            finally:
                main.call_soon_threadsafe(main_stop.set)
                waiting.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await done

        async def elect() -> None:
            from federation.client import api_client_from_dict

            thread_stop["event"] = asyncio.Event()
            started.set_result(asyncio.get_running_loop())
            async with api_client_from_dict(kubeconfig) as api:
                elector = LeaderElector(api, config)
                holder["elector"] = elector
                await elector.campaign(lead_on_main, thread_stop["event"])

        thread = threading.Thread(target=lambda: asyncio.run(elect()), name="caldera-leader-election", daemon=True)
        thread.start()
        loop = await asyncio.wrap_future(started)
        try:
            await stop.wait()
        finally:
            loop.call_soon_threadsafe(thread_stop["event"].set)
            await asyncio.to_thread(thread.join, 30)

    return gate, lambda: holder["elector"]


async def _new_event() -> asyncio.Event:
    return asyncio.Event()
