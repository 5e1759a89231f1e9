"""Deleting objects the Kubernetes way, on top of the registry.

Preconditions (uid, resourceVersion), graceful deletion (an object with finalizers gets a
deletionTimestamp and stays until the last finalizer is removed), namespaces (deleting one marks it
Terminating and deletes its contents) and garbage collection: dependents whose every owner is gone are
deleted when the owner is, unless the propagation policy is ``Orphan``, as kube's garbage collector
does, but synchronously.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from federation.apiserver import status as st
from federation.apiserver.objects import copy_obj, resource_key, timestamp
from federation.apiserver.storage import Obj, Storage
from policies.admission import AdmissionContext
from policies.kinds import KINDS, KindInfo, lookup


class Registry(Protocol):
    """What deletion needs of :class:`federation.apiserver.registry.Registry` (which imports this
    module, so it is described here rather than imported)."""

    store: Storage
    owners: OwnerIndex

    def clock(self) -> datetime: ...

    def context(self) -> AdmissionContext: ...

    async def delete(self, info: KindInfo, namespace: str, name: str, options: Obj | None = None,
                     dry_run: bool = False) -> Obj: ...


class OwnerIndex:
    """Owner uid -> its dependents (resource, namespace, name), kept current from the store's events
    (and from its rollbacks: a failed commit undoes changes the index had already seen)."""

    def __init__(self, store: Storage) -> None:
        self.by_owner: dict[str, set[tuple[str, str, str]]] = {}
        for resource, obj in store.iter_all():
            self.index(resource, obj, None)
        store.add_listener(lambda _type, resource, obj, previous: self.index(
            resource, obj if _type != "DELETED" else None, previous))
        store.add_rollback_listener(self._rolled_back)

    def index(self, resource: str, obj: Obj | None, previous: Obj | None) -> None:
        for source, add in ((previous, False), (obj, True)):
            if source is None:
                continue
            meta = source["metadata"]
            key = (resource, meta.get("namespace") or "", meta["name"])
            for ref in meta.get("ownerReferences") or ():
                uid = ref.get("uid")
                if not uid:
                    continue
                if add:
                    self.by_owner.setdefault(uid, set()).add(key)
                else:
                    deps = self.by_owner.get(uid)
                    if deps is not None:
                        deps.discard(key)
                        if not deps:
                            del self.by_owner[uid]

    def _rolled_back(self, _durable_rv: int, changes: list[tuple[str, Obj | None, Obj | None]]) -> None:
        """A failed commit undid ``changes`` (newest first): index the restored objects again."""
        for resource, restored, undone in changes:
            self.index(resource, restored, undone)


async def delete_object(registry: Registry, info: KindInfo, obj: Obj, options: Obj, dry_run: bool) -> Obj:
    """Delete ``obj`` (the version read) with ``options``' preconditions and propagation policy."""
    name = obj["metadata"]["name"]
    pre = options.get("preconditions") or {}
    if pre.get("uid") and pre["uid"] != obj["metadata"].get("uid"):
        raise st.conflict(info, name, f"Precondition failed: UID in precondition: {pre['uid']}, "
                                      f"UID in object meta: {obj['metadata'].get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
        raise st.stale(info, name)
    if info.kind == "Queue" and info.group == "scheduling.volcano.sh":
        from policies.admission.volcano_queue import validate_queue_delete

        errors = validate_queue_delete(name, registry.context())
        if errors:
            raise st.invalid(info, name, [(e.path, e.message) for e in errors])
    if dry_run:
        return obj
    policy = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else "Background")
    read_rv = int(obj["metadata"]["resourceVersion"])
    if obj["metadata"].get("finalizers") or info.kind == "Namespace":
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        marked = copy_obj(obj)
        marked["metadata"]["deletionTimestamp"] = timestamp(registry.clock())
        if info.kind == "Namespace":
            marked.setdefault("status", {})["phase"] = "Terminating"
            marked = await registry.store.update(resource_key(info), marked, read_rv)
            await _empty_namespace(registry, name)
            if marked["metadata"].get("finalizers"):
                return marked
            return await remove(registry, info, marked, policy, int(marked["metadata"]["resourceVersion"]))
        return await registry.store.update(resource_key(info), marked, read_rv)
    return await remove(registry, info, obj, policy, read_rv)


async def remove(registry: Registry, info: KindInfo, obj: Obj, policy: str, read_rv: int) -> Obj:
    """Remove ``obj`` from the store now, then collect its dependents (unless orphaned)."""
    gone = await registry.store.remove(resource_key(info), obj, read_rv)
    uid = obj["metadata"].get("uid")
    if policy != "Orphan" and uid:
        await _collect(registry, uid)
    return gone


async def _collect(registry: Registry, owner_uid: str) -> None:
    """Delete dependents whose every owner is gone (kube's garbage collector, synchronously)."""
    for resource, namespace, name in sorted(registry.owners.by_owner.get(owner_uid, ())):
        info = _info(resource)
        dependent = registry.store.get(resource, namespace, name)
        if info is None or dependent is None:
            continue
        refs = dependent["metadata"].get("ownerReferences") or []
        if any(r.get("uid") != owner_uid and _uid_alive(registry.store, r) for r in refs):
            continue
        try:
            await registry.delete(info, namespace, name, {"propagationPolicy": "Background"})
        except st.ApiError:
            continue


def _uid_alive(store: Storage, ref: Obj) -> bool:
    try:
        info = lookup(ref.get("apiVersion", ""), ref.get("kind", ""))
    except Exception:  # an owner of a kind we don't serve: assume it is alive
        return True
    return any(o["metadata"].get("uid") == ref.get("uid") for o in store.list(resource_key(info)))


def _info(resource: str) -> KindInfo | None:
    for info in KINDS:
        if resource_key(info) == resource:
            return info
    return None


async def _empty_namespace(registry: Registry, namespace: str) -> None:
    """Delete every namespaced object of a namespace being deleted."""
    for info in KINDS:
        if not info.namespaced:
            continue
        for obj in list(registry.store.list(resource_key(info), namespace)):
            try:
                await registry.delete(info, namespace, obj["metadata"]["name"])
            except st.ApiError:
                continue
