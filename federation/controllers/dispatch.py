"""Dispatch controller: ResourceBinding -> one Work per target cluster, and the two-phase start.

Keyed by Job. For the binding's current generation it renders each cluster's Work
(:mod:`federation.controllers.render`), creates or patches it only when it differs
(idempotent), deletes Works of clusters no longer in the binding and Works left by a deleted
Job (or by an older Job of the same name), and drives the hold/release/cancel protocol
(:mod:`federation.controllers.two_phase`). The execution namespace ``karmada-es-<cluster>``
is created on first use. ``spec.suspension.dispatching: true`` on the binding (copied from
the policy) freezes the Works as they are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from kubernetes_asyncio import client as k8s

from federation import metrics
from federation.controllers import app_failover, deletion
from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers.poison import PoisonGuard, describe
from federation.controllers.post_release import RELEASED_AT, STARTED_GENERATION
from federation.controllers.render import apply_overrides, share_manifest
from federation.controllers.runner import QueueController, run_controller
from federation.controllers.teardown import TeardownMixin, pinned_by_policy
from federation.controllers.two_phase import Verdict, exclusion_note, judge, merge_caps, newly_excluded
from federation.events import record_event
from policies.backoff import backoff
from policies.k8s import patches

log = logging.getLogger("caldera.controllers.dispatch")
Obj = dict[str, Any]
Key = tuple[str, str]


class DispatchController(TeardownMixin, QueueController):
    def __init__(self, api: k8s.ApiClient, options: c.ControllerOptions | None = None) -> None:
        super().__init__(api, options)
        self.jobs = self.informer(c.JOBS, self._on_job)
        self.bindings = self.informer(c.BINDINGS, self._on_binding)
        self.works = self.informer(c.WORKS, self._on_work)
        self.ops = self.informer(c.OVERRIDE_POLICIES, self._on_override)
        self.cops = self.informer(c.CLUSTER_OVERRIDE_POLICIES, self._on_override)
        self.clusters = self.informer(c.CLUSTERS, self._on_cluster)
        self.informers = [self.jobs, self.bindings, self.works, self.ops, self.cops, self.clusters]
        self.index = deletion.WorkIndex()

    # ------------------------------------------------------------------ events

    def _on_job(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        meta = obj.get("metadata") or {}
        self.queue.add((meta.get("namespace", ""), meta.get("name", "")))

    def _on_binding(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        resource = (obj.get("spec") or {}).get("resource") or {}
        if resource.get("kind") == "Job" and resource.get("name"):
            self.queue.add(((obj.get("metadata") or {}).get("namespace", ""), resource["name"]))

    def _on_work(self, kind: str, obj: Obj, old: Obj | None) -> None:
        key = self.index.update(kind, obj, old)
        if key is not None:
            self.queue.add(key)

    def _on_override(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        namespace = (obj.get("metadata") or {}).get("namespace")
        for job in self.jobs.items():
            meta = job["metadata"]
            if obj.get("kind") != "OverridePolicy" or meta.get("namespace") == namespace:
                self.queue.add((meta.get("namespace", ""), meta.get("name", "")))

    # ------------------------------------------------------------------ run

    async def run(self, stop: asyncio.Event) -> None:
        await run_controller(self.informers, self.queue, self.reconcile, stop, self.options.workers, "dispatch",
                             PoisonGuard(self._version, self._poisoned))

    def _version(self, key: Key) -> Any:
        """A poisoned job is dispatched again when it or its binding changes."""
        job = (self.jobs.get(*key) or {}).get("metadata") or {}
        rb = (self.bindings.get(key[0], c.rb_name(key[1])) or {}).get("metadata") or {}
        return (job.get("uid"), job.get("generation"), rb.get("resourceVersion"))

    async def _poisoned(self, key: Key, err: BaseException) -> None:
        job = self.jobs.get(*key)
        if job is not None:
            await self._event(job, "DispatchFailed", f"{describe(err)}; dispatch is retried when the Job or its "
                                                     f"binding changes", "Warning")

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, key: Key) -> None:
        namespace, name = key
        job = self.jobs.get(namespace, name)
        works: dict[tuple[str, str], Obj] = {}
        for ref in self.index.works_of(key):
            found = self.works.get(*ref)
            if found is not None:
                works[ref] = found
        if job is None or job["metadata"].get("deletionTimestamp"):
            await deletion.delete_works(self.rc, works, self.works)
            return
        uid = job["metadata"].get("uid", "")
        stale = {ref: w for ref, w in works.items() if (w["metadata"].get("labels") or {}).get(c.JOB_UID_LABEL) != uid}
        await deletion.delete_works(self.rc, stale, self.works)
        rb = self.bindings.get(namespace, c.rb_name(name))
        if rb is None or ((rb.get("spec") or {}).get("resource") or {}).get("uid") != uid:
            return
        if ((rb.get("spec") or {}).get("suspension") or {}).get("dispatching"):
            return
        generation = b.generation_of(rb)
        placement = b.placement_of(rb) or {}
        shares = {cl: s for cl, s in (placement.get("clusters") or {}).items() if int(s.get("replicas") or 0) > 0}
        if not (rb.get("spec") or {}).get("clusters"):
            shares = {}
        current = {ref[0][len("karmada-es-"):]: w for ref, w in works.items() if ref not in stale}
        kept = await self._settle_evictions(key, rb, generation, {cl: current.get(cl) for cl in shares})
        gone = {(c.execution_ns(cl), w["metadata"]["name"]): w for cl, w in current.items()
                if cl not in shares and cl not in kept}
        await deletion.delete_works(self.rc, gone, self.works)
        if not shares:
            return
        multi = len(shares) > 1 and placement.get("strategy") != "Duplicated"
        cancelled = c.int_annotation(rb, c.CANCELLED_GENERATION, -1) == generation
        timeout = self._timeout(job)
        released = any(_placement(w).get("generation") == generation and not _placement(w).get("hold") and
                       _placement(w).get("clusters", 1) > 1 for w in current.values())
        verdict = Verdict("none")
        if multi and not cancelled and not released:  # once released, failures are the job's own business
            placed_at = c.parse_time(c.annotations_of(rb).get(c.PLACED_AT)) or self.clock()
            verdict = judge({cl: current.get(cl) for cl in shares}, generation, placed_at, timeout, self.clock())
        after_release = multi and released and not cancelled  # the second phase: complete or abort
        if after_release:
            verdict = self._judge_started(key, job, rb, generation, {cl: current.get(cl) for cl in shares})
        released = released or verdict.action == "release"
        cancelled = cancelled or verdict.action == "cancel"
        cluster_objs = {o["metadata"]["name"]: o for o in self.clusters.items()}
        overrides = [p for p in self.ops.items() if p["metadata"].get("namespace") == namespace] + self.cops.items()
        frozen = set((((rb.get("spec") or {}).get("suspension") or {}).get("dispatchingOnClusters") or {}).get(
            "clusterNames") or [])
        for cluster, share in sorted(shares.items()):
            if cluster in frozen:  # policy suspension.dispatchingOnClusters: leave that Work as it is
                continue
            body = self._render(job, cluster, share, placement, generation, multi, released, cancelled, timeout,
                                cluster_objs.get(cluster), overrides)
            if pinned_by_policy(rb):  # the policy keeps it here: a cut-off agent must not fence it
                body["spec"]["placement"]["failover"] = False
            await self._apply(body, current.get(cluster))
        if verdict.action == "release":
            await self._released(job, rb, generation, shares)
        elif verdict.action == "cancel" and after_release:
            await self._torn_down(job, rb, generation, shares, verdict, cluster_objs)
        elif verdict.action == "cancel":
            await self._cancelled(job, rb, generation, shares, verdict)
        elif verdict.action == "wait":
            self.queue.add(key, verdict.wait_seconds + 0.05)
        elif after_release and verdict.action == "none" and c.int_annotation(rb, STARTED_GENERATION, -1) != generation:
            await self._annotate(rb, {STARTED_GENERATION: str(generation)})

    async def _settle_evictions(self, key: Key, rb: Obj, generation: int, new_shares: dict[str, Obj | None]) -> set[str]:
        """Application failover's eviction tasks: the clusters whose old Work stays for now; tasks
        whose purge mode lets the old Work go are removed from the binding."""
        tasks = app_failover.tasks_of(rb)
        if not tasks:
            return set()
        now = self.clock()
        keep, wake = app_failover.settle(tasks, new_shares, generation, now)
        if keep != tasks:
            meta = rb["metadata"]
            patched = await self.rc.patch(c.BINDINGS, meta["name"], {"spec": {"gracefulEvictionTasks": keep or None}},
                                          meta["namespace"])
            self.bindings.remember(patched)
        if wake is not None:  # a grace period ends: the old Work goes then even if the new share is not running
            self.queue.add(key, max(0.05, wake - now))
        return {str(t.get("fromCluster")) for t in keep}

    def _timeout(self, job: Obj) -> int:
        value = c.int_annotation(job, c.RESERVE_TIMEOUT, self.options.reserve_timeout_seconds)
        return value if value >= 1 else self.options.reserve_timeout_seconds

    def _render(self, job: Obj, cluster: str, share: dict[str, Any], placement: dict[str, Any], generation: int,
                multi: bool, released: bool, cancelled: bool, timeout: int, cluster_obj: Obj | None,
                overrides: list[Obj]) -> Obj:
        meta = job["metadata"]
        manifest = share_manifest(job, share, placement.get("totals") or {}, generation)
        notes: dict[str, str] = {}
        if overrides and cluster_obj is not None:
            applied, problems = apply_overrides(manifest, job, b.cluster_snapshot(cluster_obj),
                                                overrides)
            if applied:
                notes["caldera.io/overrides-applied"] = ", ".join(applied)
            if problems:
                notes["caldera.io/overrides-skipped"] = "; ".join(problems)[:1000]
        job_label = c.work_name(meta.get("namespace", ""), meta.get("name", ""))
        return {
            "apiVersion": "work.karmada.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": job_label, "namespace": c.execution_ns(cluster),
                         "labels": {c.JOB_LABEL: job_label, c.JOB_UID_LABEL: meta.get("uid", "")},
                         "annotations": notes},
            "spec": {
                "workload": {"manifests": [manifest]},
                "placement": {"generation": generation, "hold": multi and not released, "cancelled": cancelled,
                              "clusters": len(placement.get("clusters") or {}) if multi else 1,
                              "reserveTimeoutSeconds": timeout,
                              # fencing token: the agent stops every pod of an older generation
                              "keepsFromGeneration": min(generation, int(placement.get("keepsFrom", generation)))},
            },
        }

    async def _apply(self, body: Obj, existing: Obj | None) -> None:
        meta = body["metadata"]
        if existing is None:
            try:
                created = await self.rc.create(c.WORKS, body, meta["namespace"])
            except k8s.ApiException as err:
                if err.status == 404:  # the execution namespace does not exist yet
                    await self._ensure_namespace(meta["namespace"])
                    created = await self.rc.create(c.WORKS, body, meta["namespace"])
                elif err.status == 409:
                    existing = await self.rc.get(c.WORKS, meta["name"], meta["namespace"])
                    created = None
                else:
                    raise
            if created is not None:
                self.works.remember(created)
                self.index.update("ADDED", created, None)
                return
        assert existing is not None
        current = {"metadata": {k: existing["metadata"].get(k) or {} for k in ("labels", "annotations")},
                   "spec": {k: (existing.get("spec") or {}).get(k) for k in ("workload", "placement")}}
        desired = {"metadata": {k: meta.get(k) or {} for k in ("labels", "annotations")}, "spec": body["spec"]}
        patch = patches.merge_diff(current, desired)
        if patch:
            patched = await self.rc.patch(c.WORKS, meta["name"], patch, meta["namespace"])
            self.works.remember(patched)

    async def _ensure_namespace(self, namespace: str) -> None:
        try:
            await self.rc.create(c.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": namespace}})
        except k8s.ApiException as err:
            if err.status != 409:
                raise

    async def _released(self, job: Obj, rb: Obj, generation: int, shares: dict[str, Any]) -> None:
        notes = c.annotations_of(rb)
        # the post-release deadline counts from here (federation/controllers/post_release.py)
        await self._annotate(rb, {c.RESERVE_ATTEMPTS: None, c.RETRY_AFTER: None,
                                  RELEASED_AT: c.rfc3339(self.clock())} if c.RESERVE_ATTEMPTS in notes or
                             c.RETRY_AFTER in notes else {RELEASED_AT: c.rfc3339(self.clock())})
        metrics.two_phase_outcome("released", self._waited(rb))
        await self._event(job, "Released", f"generation {generation}: every share reserved on "
                                           f"{', '.join(sorted(shares))}; released")

    async def _cancelled(self, job: Obj, rb: Obj, generation: int, shares: dict[str, Any], verdict: Verdict,
                         extra: dict[str, str] | None = None, min_delay: float = 0.0) -> None:
        """Cancel every share; ``extra`` annotations go in the same write (placement reads them together)."""
        now = self.clock()
        attempts = c.int_annotation(rb, c.RESERVE_ATTEMPTS, 0) + 1
        delay = max(min_delay, backoff(attempts, self.options.retry_base_seconds, self.options.retry_max_seconds))
        before = c.json_annotation(rb, c.RESERVE_CAPS)
        before = before if isinstance(before, dict) else {}
        caps = merge_caps(before, shares, verdict.failed, now + self.options.cap_ttl_seconds, now=now,
                          exclude_after=self.options.exclude_after_failures)
        await self._annotate(rb, {c.CANCELLED_GENERATION: str(generation), c.RESERVE_ATTEMPTS: str(attempts),
                                  c.RETRY_AFTER: c.rfc3339(now + delay), c.RESERVE_CAPS: c.canonical_json(caps),
                                  **(extra or {})})
        metrics.two_phase_outcome("cancelled", self._waited(rb))
        await self._event(job, "Cancelled", f"generation {generation}: {verdict.message}; every share cancelled, "
                                            f"re-placing in {delay:.0f}s with lower estimates on "
                                            f"{', '.join(verdict.failed)}", "Warning")
        for cluster in newly_excluded(before, caps):
            await self._event(job, "ClusterExcluded", exclusion_note(cluster, caps[cluster], now), "Warning")

    def _waited(self, rb: Obj) -> float | None:
        """Seconds since the binding's generation was placed (caldera.io/placed-at), if it says."""
        placed_at = c.parse_time(c.annotations_of(rb).get(c.PLACED_AT))
        return None if placed_at is None else self.clock() - placed_at

    async def _annotate(self, rb: Obj, notes: dict[str, str | None]) -> None:
        meta = rb["metadata"]
        patched = await self.rc.patch(c.BINDINGS, meta["name"], {"metadata": {"annotations": notes}},
                                      meta["namespace"])
        self.bindings.remember(patched)

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        try:
            await record_event(self.api, job, reason, message[:1000], type_, component="caldera-dispatch")
        except Exception as err:  # events are best effort
            log.debug("event %s not recorded: %s", reason, err)


def _placement(work: Obj) -> dict[str, Any]:
    return dict((work.get("spec") or {}).get("placement") or {})


async def dispatch_controller(ctx: Any, options: c.ControllerOptions | None = None) -> None:
    """``Controller`` entry point: run until the server stops."""
    from federation.client import api_client_from_dict

    async with api_client_from_dict(ctx.kubeconfig) as api:
        options = options or ctx.extra.get("controller_options") or c.ControllerOptions()
        if ctx.extra.get("gang_start_deadline") is not None:  # caldera serve --gang-start-deadline
            options = dataclasses.replace(options, start_deadline_seconds=float(ctx.extra["gang_start_deadline"]))
        await DispatchController(api, options).run(ctx.stop)
