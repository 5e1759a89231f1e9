"""Job kinds converted on admission: VCJob, PyTorchJob, TFJob and MPIJob become a Volcano Job.

The submitted object is stored as written (``kubectl get pytorchjobs`` and ``kubectl apply``
keep working), and the API server keeps a ``batch.volcano.sh/v1alpha1`` Job of the same name
and namespace next to it: converted by :func:`policies.conversions.to_job`, annotated
``caldera.io/converted-from: <Kind>``, and owned by the source (controller ownerReference), so
deleting the source deletes the Job. The Job is what placement, dispatch and the agents run.

The Job is admitted (defaulted and validated as a Job, a dry run) *before* the source is
stored, so a source whose Job would be rejected changes nothing. An update of the source
updates the Job's spec under the Job's update rules. If the server dies between the two
commits, :func:`repair` (run at start-up) creates the missing Jobs.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from federation.apiserver import status as st
from federation.apiserver.storage import Storage
from policies.conversions import to_job
from policies.kinds import KINDS, KindInfo, lookup

log = logging.getLogger("caldera.apiserver.conversion")
Obj = dict[str, Any]
JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")


class Registry(Protocol):
    """What conversion needs of :class:`federation.apiserver.registry.Registry` (which calls it):
    the store, and admitted creates and updates. A protocol, so this module needs no import of
    the registry."""

    store: Storage

    async def create(self, info: KindInfo, namespace: str, body: Any, dry_run: bool = False) -> Obj: ...

    async def update(self, info: KindInfo, namespace: str, name: str, body: Any, subresource: str = "",
                     dry_run: bool = False) -> Obj: ...


def converts(info: KindInfo) -> bool:
    return info.converts_to == "Job"


def owner_ref(source: Obj) -> Obj:
    meta = source["metadata"]
    return {"apiVersion": source["apiVersion"], "kind": source["kind"], "name": meta["name"],
            "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def owned_by(job: Obj, source: Obj) -> bool:
    uid = source["metadata"].get("uid")
    return any(r.get("uid") == uid and r.get("controller") for r in job["metadata"].get("ownerReferences") or [])


def job_body(info: KindInfo, source: Obj) -> Obj:
    """The Job for ``source`` (a stored or about-to-be-stored wire dict of a converted kind)."""
    model = info.model.model_validate(source)
    converted: Obj = to_job(model).to_wire()
    meta = source["metadata"]
    job_meta: Obj = {"name": meta["name"], "namespace": meta.get("namespace") or "default",
                     "ownerReferences": [owner_ref(source)]}
    for key in ("labels", "annotations"):
        value = (converted.get("metadata") or {}).get(key)
        if value:
            job_meta[key] = value
    return {"apiVersion": JOBS.api_version, "kind": "Job", "metadata": job_meta, "spec": converted.get("spec") or {}}


def _existing(registry: Registry, source: Obj) -> Obj | None:
    meta = source["metadata"]
    return registry.store.get(f"{JOBS.group}/{JOBS.plural}", meta.get("namespace") or "", meta["name"])


async def check(registry: Registry, info: KindInfo, source: Obj) -> None:
    """Raise the Job's admission error (422) or a name clash (409) before ``source`` is stored."""
    body = job_body(info, source)
    namespace = body["metadata"]["namespace"]
    existing = _existing(registry, source)
    try:
        if existing is None:
            await registry.create(JOBS, namespace, body, dry_run=True)
        elif owned_by(existing, source):
            await registry.update(JOBS, namespace, body["metadata"]["name"], _as_update(existing, body),
                                  dry_run=True)
        else:
            raise st.ApiError(409, "AlreadyExists", f'{info.kind} "{source["metadata"]["name"]}" cannot be '
                                                    f'converted: a Job "{source["metadata"]["name"]}" not created '
                                                    f'from it already exists in namespace "{namespace}"')
    except st.ApiError as exc:
        if exc.code == 422:
            raise st.ApiError(422, "Invalid", f'{info.kind}.{info.group} "{source["metadata"]["name"]}" is '
                                              f'invalid: its converted Job is rejected: {exc.message}', exc.details) from None
        raise


async def sync(registry: Registry, info: KindInfo, source: Obj) -> Obj | None:
    """Create or update the Job of a stored ``source``; returns it (None if a Job not ours is there)."""
    body = job_body(info, source)
    namespace = body["metadata"]["namespace"]
    existing = _existing(registry, source)
    if existing is None:
        return await registry.create(JOBS, namespace, body)
    if not owned_by(existing, source):
        return None
    return await registry.update(JOBS, namespace, body["metadata"]["name"], _as_update(existing, body))


def _as_update(existing: Obj, body: Obj) -> Obj:
    meta = dict(existing["metadata"])
    for key in ("labels", "annotations"):
        if key in body["metadata"]:
            meta[key] = body["metadata"][key]
    return dict(existing, metadata=meta, spec=body["spec"])


async def repair(registry: Registry) -> int:
    """Create the Jobs missing for stored sources (a crash between the two commits); returns how many."""
    made = 0
    for info in KINDS:
        if not converts(info):
            continue
        for source in registry.store.list(f"{info.group}/{info.plural}"):
            if _existing(registry, source) is None and not source["metadata"].get("deletionTimestamp"):
                try:
                    await sync(registry, info, source)
                    made += 1
                except st.ApiError as exc:
                    log.warning("cannot convert %s %s: %s", info.kind, source["metadata"]["name"], exc.message)
    return made
