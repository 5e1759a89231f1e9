"""The placement controller's writes (a mixin of ``PlacementController``): the ResourceBinding's
spec and status, its deletion, and the Job's Events.

Every write updates the controller's binding cache at once (``bindings.remember``), so the next
reconcile of the same job sees what was just written before the watch delivers it.
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes_asyncio import client as k8s

from federation.controllers import common as c
from federation.controllers.claim import claim_patch
from federation.controllers.runner import is_not_found
from federation.events import record_event
from policies.k8s import patches

log = logging.getLogger("caldera.controllers.placement")
Obj = dict[str, Any]
Key = tuple[str, str]


class BindingWrites:
    """Needs, from the controller: ``rc``, ``api`` and the ``bindings`` informer."""

    rc: Any
    api: Any
    bindings: Any

    async def _write_binding(self, rb: Obj | None, body: Obj) -> Obj:
        meta = body["metadata"]
        if rb is None:
            try:
                created: Obj = await self.rc.create(c.BINDINGS, body, meta["namespace"])
                self.bindings.remember(created)
                return created
            except k8s.ApiException as err:
                if err.status != 409:
                    raise
                rb = await self.rc.get(c.BINDINGS, meta["name"], meta["namespace"])
        assert rb is not None
        current = {"metadata": {k: rb["metadata"].get(k) for k in ("labels", "annotations", "ownerReferences")},
                   "spec": rb.get("spec") or {}}
        desired = {"metadata": {k: body["metadata"].get(k) for k in ("labels", "annotations", "ownerReferences")},
                   "spec": body["spec"]}
        patch = patches.merge_diff(current, desired)
        if not patch:
            return rb
        patched: Obj = await self.rc.patch(c.BINDINGS, meta["name"], patch, meta["namespace"])
        self.bindings.remember(patched)
        return patched

    async def _write_status(self, rb: Obj | None, status: dict[str, Any]) -> None:
        if rb is None:
            return
        patch = patches.merge_diff({k: (rb.get("status") or {}).get(k) for k in status}, status)
        if not patch:
            return
        meta = rb["metadata"]
        patched = await self.rc.patch(c.BINDINGS, meta["name"], {"status": patch}, meta["namespace"], "status")
        self.bindings.remember(patched)

    async def _mark_claim(self, job: Obj, policy: Obj | None) -> None:
        """Karmada's claim marks on the Job (permanent-id label, policy annotations), on change only."""
        patch = claim_patch(job, policy)
        if patch is None:
            return
        meta = job.get("metadata") or {}
        try:
            await self.rc.patch(c.JOBS, meta.get("name", ""), patch, meta.get("namespace", ""))
        except k8s.ApiException as err:  # marks are informational: never let them stop a placement
            # (a Job stored before a validation rule tightened answers 422 to any patch; the poison
            # handling must still see the placement's own error)
            log.debug("claim marks on %s not written: %s", _ns_name(job), err.status)

    async def _delete_binding(self, namespace: str, name: str) -> None:
        try:
            await self.rc.delete(c.BINDINGS, name, namespace)
        except k8s.ApiException as err:
            if not is_not_found(err):
                raise
        self.bindings.store.pop((namespace, name), None)

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        try:
            await record_event(self.api, job, reason, message[:1000], type_, component="caldera-placement")
        except Exception as err:  # events are best effort
            log.debug("event %s for %s not recorded: %s", reason, _ns_name(job), err)



def _ns_name(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
