"""Status aggregation controller: the only writer of a federated Job's ``.status``.

It watches Jobs, ResourceBindings and the Works labelled ``caldera.io/job``, and for every
Job touched by a change computes :func:`federation.controllers.status_aggregate.aggregate`
and writes the result to the Job's status subresource, only when it differs from what is
stored (the aggregate is deterministic, so there are no write loops). A phase change also
records a ``v1 Event`` on the Job. Started by the API server as ``await status_controller(ctx)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from federation import metrics
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.poison import PoisonGuard, describe
from federation.controllers.runner import Informer, obj_key
from federation.controllers.runner import ObjKey as Key
from federation.controllers.share_views import condition
from federation.controllers.status_aggregate import Aggregate, aggregate
from federation.events import record_event
from policies.kinds import lookup
from policies.models.karmada_work import JOB_LABEL

Obj = dict[str, Any]
log = logging.getLogger("caldera.controllers.status")

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
BINDINGS = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")
#: re-examine every Job this often even without events (cheap: nothing is written if unchanged)
RESYNC_SECONDS = 30.0
RETRY_SECONDS = 1.0
WARNING_PHASES = frozenset({"Failed", "Aborted", "Restarting"})


def job_key_of_binding(binding: Obj) -> Key | None:
    resource = (binding.get("spec") or {}).get("resource") or {}
    namespace, name = obj_key(binding)
    if resource.get("kind") == "Job" and resource.get("name"):
        return str(resource.get("namespace") or namespace), str(resource["name"])
    return (namespace, name.removesuffix("-job")) if name.endswith("-job") else None


def job_key_of_work(work: Obj) -> Key | None:
    label = ((work.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL) or ""
    namespace, dot, name = label.partition(".")
    return (namespace, name) if dot and namespace and name else None


class StatusController:
    def __init__(self, rc: ResourceClient, api: Any, clock: Any = None) -> None:
        self.rc = rc
        self.api = api
        self.clock = clock or (lambda: datetime.now(UTC))
        self.dirty: set[Key] = set()
        self.wake = asyncio.Event()
        self.jobs = Informer(rc, JOBS, self._job_changed)
        self.bindings = Informer(rc, BINDINGS, lambda _t, o, _old: self._mark(job_key_of_binding(o)))
        self.works = Informer(rc, WORKS, self._work_changed, label_selector=JOB_LABEL)
        #: Works by their caldera.io/job label, so a Job's inputs are found without scanning every Work
        self.works_by_job: dict[str, dict[Key, Obj]] = {}
        self._work_label: dict[Key, str] = {}
        self.writes = 0
        self.retry_at: dict[Key, float] = {}
        #: monotonic time a new Job (no status yet) was first seen, until its binding is Scheduled=True
        self.unplaced_since: dict[Key, float] = {}
        #: Jobs whose aggregation fails on their inputs: skipped until an input changes
        self.guard = PoisonGuard(self._version, self._poisoned)

    def _version(self, key: Any) -> Any:
        job, binding, works = self.inputs(key)
        return tuple(((o or {}).get("metadata") or {}).get("resourceVersion") for o in (job, binding, *works))

    async def _poisoned(self, key: Any, err: BaseException) -> None:
        job = self.jobs.store.get(key)
        if job is not None:
            await record_event(self.api, job, "StatusAggregationFailed", f"{describe(err)}; retried when the Job, "
                               f"its binding or its Works change", "Warning", component="caldera-status-controller")

    def _job_changed(self, event: str, job: Obj, _old: Obj | None) -> None:
        key = obj_key(job)
        if event == "DELETED":
            self.unplaced_since.pop(key, None)
        elif not job.get("status") and key not in self.unplaced_since:
            self.unplaced_since[key] = time.monotonic()
        self._mark(key)

    def _work_changed(self, event: str, work: Obj, _old: Obj | None) -> None:
        key = obj_key(work)
        label = ((work.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL) or ""
        previous = self._work_label.pop(key, None)
        if previous is not None:  # drop the old entry (also when a Work was relabelled)
            bucket = self.works_by_job.get(previous, {})
            bucket.pop(key, None)
            if not bucket:
                self.works_by_job.pop(previous, None)
        if event != "DELETED":
            self.works_by_job.setdefault(label, {})[key] = work
            self._work_label[key] = label
        self._mark(job_key_of_work(work))

    def _observe_placement(self, key: Key, binding: Obj | None) -> None:
        """Placement latency: Job first seen -> its binding Scheduled=True (both seen through watches)."""
        if key in self.unplaced_since and (condition(binding, "Scheduled") or {}).get("status") == "True":
            metrics.observe_placement_latency(time.monotonic() - self.unplaced_since.pop(key))

    def _mark(self, key: Key | None) -> None:
        if key is not None:
            self.dirty.add(key)
            self.wake.set()

    def inputs(self, key: Key) -> tuple[Obj | None, Obj | None, list[Obj]]:
        job = self.jobs.store.get(key)
        namespace, name = key
        binding = self.bindings.store.get((namespace, f"{name}-job")) or self.bindings.store.get(key)
        label = f"{namespace}.{name}"
        works = list(self.works_by_job.get(label, {}).values())
        return job, binding, works

    async def reconcile(self, key: Key) -> Aggregate | None:
        job, binding, works = self.inputs(key)
        if job is None or (job.get("metadata") or {}).get("deletionTimestamp"):
            return None
        self._observe_placement(key, binding)
        result = aggregate(job, binding, works, self.clock())
        if result.status == (job.get("status") or {}):
            return result
        body = {"apiVersion": JOBS.api_version, "kind": "Job",
                "metadata": {"name": key[1], "namespace": key[0]}, "status": result.status}
        written = await self.rc.replace(JOBS, body, subresource="status")
        self.jobs.remember(written)
        self.writes += 1
        metrics.STATUS_WRITES.labels(kind="Job").inc()
        if result.phase_changed:
            metrics.JOB_PHASE_TRANSITIONS.labels(phase=result.new_phase).inc()
            state = result.status.get("state") or {}
            message = f"phase {result.old_phase or '<none>'} -> {result.new_phase}: {state.get('message', '')}"
            try:
                await record_event(self.api, written, str(state.get("reason") or result.new_phase), message,
                                   "Warning" if result.new_phase in WARNING_PHASES else "Normal",
                                   component="caldera-status-controller")
            except (ApiException, OSError) as exc:
                log.warning("recording an event for Job %s/%s failed: %s", key[0], key[1], exc)
        return result

    async def work_loop(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.jobs.synced.wait(), self.bindings.synced.wait(), self.works.synced.wait())
        loop = asyncio.get_running_loop()
        next_resync = loop.time() + RESYNC_SECONDS
        while not stop.is_set():
            due = min([next_resync, *self.retry_at.values()])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), max(0.0, due - loop.time()))
            self.wake.clear()
            now = loop.time()
            if now >= next_resync:
                self.dirty.update(self.jobs.store)
                next_resync = now + RESYNC_SECONDS
            for key in [k for k, at in self.retry_at.items() if at <= now]:
                del self.retry_at[key]
                self.dirty.add(key)
            batch, self.dirty = sorted(self.dirty), set()
            for key in batch:
                version = self._version(key)
                if self.guard.skip(key, version):
                    continue
                try:
                    await self.reconcile(key)
                except ApiException as exc:
                    if exc.status != 404:
                        log.warning("writing status of Job %s/%s failed: %s", key[0], key[1], exc.reason)
                        self.retry_at[key] = loop.time() + RETRY_SECONDS
                except Exception as exc:  # noqa: BLE001 - one bad object must not stop the others
                    # the aggregate is a pure function of the inputs: the same inputs fail the same way
                    await self.guard.poison(key, version, exc, "status")

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.jobs.run(stop), self.bindings.run(stop), self.works.run(stop),
                             self.work_loop(stop))


async def status_controller(context: Any) -> None:
    """Entry point for ``federation.controllers.CONTROLLERS``."""
    async with api_client_from_dict(context.kubeconfig) as api:
        await StatusController(ResourceClient(api), api).run(context.stop)
