"""Kubernetes object semantics on top of the store.

uid, creationTimestamp, generation (bumped on spec changes only), optimistic concurrency
on resourceVersion, the ``/status`` subresource (spec and status written separately),
namespaces (objects need an existing namespace), pod binding and eviction. Admission runs on
every create and update of the main resource. Deletion (finalizers, namespaces, garbage
collection through ownerReferences) is in :mod:`federation.apiserver.deletion`.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from federation.apiserver import apply as field_managers
from federation.apiserver import conversion
from federation.apiserver import status as st
from federation.apiserver.deletion import OwnerIndex, delete_object, remove
from federation.apiserver.objects import copy_obj, label_namespace, resource_key, timestamp
from federation.apiserver.patch import STRATEGIC, apply_patch
from federation.apiserver.selectors import Predicate
from federation.apiserver.storage import KeyExists, Obj, StaleWrite, Storage
from federation.apiserver.strategic import strategic_merge
from federation.apiserver.validation import admit_body, check_schema
from policies.admission import AdmissionContext
from policies.kinds import KINDS, KindInfo, lookup

Clock = Callable[[], datetime]
#: how often a write without a precondition is retried after losing a race with another writer
WRITE_RETRIES = 8

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
NAMESPACES = lookup("v1", "Namespace")
PODS = lookup("v1", "Pod")
_BY_KIND: dict[str, KindInfo] = {}
for _info in KINDS:
    if _info.converts_to is None:
        _BY_KIND.setdefault(_info.kind, _info)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Registry:
    """Create/read/update/delete with Kubernetes rules; every write goes through the store."""

    def __init__(self, store: Storage, clock: Clock = utc_now, scheduler_name: str = "volcano") -> None:
        self.store = store
        self.clock = clock
        self.scheduler_name = scheduler_name
        #: owner uid -> dependents, for garbage collection (deletion.py)
        self.owners = OwnerIndex(store)
        #: checks every create/update passes (new object, old or None) before it is stored or
        #: answered as a dry run: RBAC escalation prevention (federation/apiserver/rbac).
        self.write_checks: list[Callable[[KindInfo, Obj, Obj | None], None]] = []

    # -- helpers -------------------------------------------------------------------------

    def context(self) -> AdmissionContext:
        def get(kind: str, namespace: str | None, name: str) -> Obj | None:
            info = _BY_KIND.get(kind)
            if info is None:
                return None
            return self.store.get(resource_key(info), namespace or "" if info.namespaced else "", name)

        def list_(kind: str, namespace: str | None) -> list[Obj]:
            info = _BY_KIND.get(kind)
            if info is None:
                return []
            return self.store.list(resource_key(info), namespace if info.namespaced else None)

        return AdmissionContext(get=get, list=list_, online=True, scheduler_name=self.scheduler_name)

    async def ensure_namespace(self, name: str) -> None:
        if self.store.get(resource_key(NAMESPACES), "", name) is None:
            await self._ensure(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def ensure_default_queue(self) -> None:
        """Volcano installs a ``default`` queue; jobs without ``spec.queue`` go there."""
        queues = lookup("scheduling.volcano.sh/v1beta1", "Queue")
        if self.store.get(resource_key(queues), "", "default") is None:
            await self._ensure(queues, {"apiVersion": queues.api_version, "kind": "Queue",
                                        "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}})

    async def _ensure(self, info: KindInfo, body: Obj) -> None:
        try:
            await self.create(info, "", body)
        except st.ApiError as exc:
            if exc.code != 409:  # another replica starting at the same time made it
                raise

    async def _retrying(self, attempt: Callable[[], Awaitable[Obj]], precondition: bool, info: KindInfo,
                        name: str) -> Obj:
        """Run ``attempt`` (read, decide, conditional write); after losing a race to another writer,
        read again and retry, unless the caller stated the resourceVersion (then 409 Conflict)."""
        for _ in range(WRITE_RETRIES):
            try:
                return await attempt()
            except StaleWrite:
                if precondition:
                    raise st.stale(info, name) from None
                await self.store.consistent()
        raise st.conflict(info, name, "the object keeps changing; try again")

    async def _fresh(self, info: KindInfo, namespace: str, name: str, wanted_rv: str | None) -> Obj:
        """The object, read again from the backend when the caller has seen a newer version than the
        cache (another replica wrote it a moment ago)."""
        old = self.get(info, namespace, name)
        if wanted_rv and wanted_rv.isdigit() and int(wanted_rv) > int(old["metadata"]["resourceVersion"]):
            await self.store.consistent()
            old = self.get(info, namespace, name)
        return old

    def _check_namespace(self, info: KindInfo, namespace: str) -> None:
        if not info.namespaced:
            return
        ns = self.store.get(resource_key(NAMESPACES), "", namespace)
        if ns is None:
            raise st.namespace_not_found(namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise st.ApiError(403, "Forbidden", f'{info.resource_ref} "{namespace}" is forbidden: unable to '
                                                f'create new content in namespace {namespace} because it is '
                                                f'being terminated')

    def _envelope(self, info: KindInfo, namespace: str, body: Any, name: str | None = None) -> Obj:
        """Check apiVersion/kind/namespace/name of a request body against the URL."""
        if not isinstance(body, dict):
            raise st.bad_request(f"the request body must be a JSON object describing a {info.kind}")
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version and api_version != info.api_version:
            raise st.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                 f"API version ({info.api_version})")
        if kind and kind != info.kind:
            raise st.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({info.kind})")
        body = dict(body, apiVersion=info.api_version, kind=info.kind)
        meta = body.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise st.invalid(info, name or "", [("metadata", "must be an object")])
        meta = dict(meta)
        body["metadata"] = meta
        wrong = [(f"metadata.{key}", f"Invalid value: {meta[key]!r}: must be a string")
                 for key in ("name", "generateName", "namespace", "uid", "resourceVersion")
                 if meta.get(key) is not None and not isinstance(meta[key], str)]
        if wrong:
            raise st.invalid(info, name or "", wrong)
        if info.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise st.bad_request("the namespace of the provided object does not match the namespace sent "
                                     "on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if name is not None:
            if meta.get("name") and meta["name"] != name:
                raise st.bad_request(f"the name of the object ({meta['name']}) does not match the name on the "
                                     f"URL ({name})")
            meta["name"] = name
        checked: Obj = body
        return checked

    def _check_name(self, info: KindInfo, name: str) -> None:
        if info.group == "rbac.authorization.k8s.io":  # path-segment names: system:masters, caldera:agent
            from policies.admission.rbac import path_segment_name_error

            problem = path_segment_name_error(name)
            if problem:
                raise st.invalid(info, name, [("metadata.name", problem)])
            return
        if len(name) > 253 or not _NAME_RE.match(name):
            raise st.invalid(info, name, [("metadata.name", f"Invalid value: {name!r}: a lowercase RFC 1123 "
                                           "subdomain must consist of lower case alphanumeric characters, '-' or "
                                           "'.', and must start and end with an alphanumeric character")])

    # -- reads ---------------------------------------------------------------------------

    def get(self, info: KindInfo, namespace: str, name: str) -> Obj:
        obj = self.store.get(resource_key(info), namespace if info.namespaced else "", name)
        if obj is None:
            raise st.not_found(info, name)
        return obj

    def list(self, info: KindInfo, namespace: str | None, predicate: Predicate | None) -> list[Obj]:
        items = self.store.list(resource_key(info), namespace if info.namespaced else None)
        if predicate is not None:
            items = [o for o in items if predicate(o)]
        return items

    # -- writes --------------------------------------------------------------------------

    async def create(self, info: KindInfo, namespace: str, body: Any, dry_run: bool = False) -> Obj:
        body = self._envelope(info, namespace, body)
        meta = body["metadata"]
        key = resource_key(info)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise st.invalid(info, "", [("metadata.name", "Required value: name or generateName is required")])
            for _ in range(8):
                candidate = prefix + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
                if self.store.get(key, namespace, candidate) is None:
                    break
            meta["name"] = candidate
        name = meta["name"]
        self._check_name(info, name)
        self._check_namespace(info, namespace)
        if self.store.get(key, namespace if info.namespaced else "", name) is not None:
            raise st.already_exists(info, name)
        for server_field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                             "deletionGracePeriodSeconds", "generation", "selfLink", "managedFields"):
            meta.pop(server_field, None)
        label_namespace(info, meta)
        obj = admit_body(info, body, None, self.context())
        meta = obj.setdefault("metadata", {})
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=timestamp(self.clock()), generation=1)
        if info.kind == "Namespace":
            obj.setdefault("status", {}).setdefault("phase", "Active")
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        if conversion.converts(info):
            await conversion.check(self, info, obj)  # the Job it becomes must be admissible too
        for check in self.write_checks:
            check(info, obj, None)
        field_managers.record(info, None, obj, timestamp(self.clock()))
        if dry_run:
            return obj
        try:
            stored = await self.store.create(key, obj)
        except KeyExists:
            raise st.already_exists(info, name) from None
        if conversion.converts(info):
            await conversion.sync(self, info, stored)
        return stored

    async def update(self, info: KindInfo, namespace: str, name: str, body: Any, subresource: str = "",
                     dry_run: bool = False) -> Obj:
        self.get(info, namespace, name)  # 404 before any complaint about the body
        body = self._envelope(info, namespace, body, name)
        wanted = body["metadata"].get("resourceVersion")
        wanted_uid = body["metadata"].get("uid")

        async def attempt() -> Obj:
            old = await self._fresh(info, namespace, name, wanted)
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise st.stale(info, name)
            if wanted_uid and wanted_uid != old["metadata"].get("uid"):
                # kube-apiserver treats a uid in the body as a precondition of the update
                raise st.conflict(info, name, f"Precondition failed: UID in precondition: {wanted_uid}, "
                                              f"UID in object meta: {old['metadata'].get('uid')}")
            return await self._update_from(info, old, copy_obj(body), subresource, dry_run)

        return await self._retrying(attempt, bool(wanted), info, name)

    async def _update_from(self, info: KindInfo, old: Obj, body: Obj, subresource: str, dry_run: bool) -> Obj:
        """Write ``body`` over ``old`` (the version read), with the update rules of ``subresource``."""
        if subresource == "status":
            new = copy_obj(old)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
            check_schema(info, new)
        else:
            new = body
            new_meta = new["metadata"]
            label_namespace(info, new_meta)
            for kept in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
                if kept in old["metadata"]:
                    new_meta[kept] = old["metadata"][kept]
                else:
                    new_meta.pop(kept, None)
            if info.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            new = admit_body(info, new, old, self.context())
            for kept in ("uid", "creationTimestamp", "generation", "deletionTimestamp", "namespace"):
                if kept in old["metadata"]:
                    new["metadata"][kept] = old["metadata"][kept]
            if _spec_part(new) != _spec_part(old):
                new["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1
        old_rv = old["metadata"]["resourceVersion"]
        new["metadata"]["resourceVersion"] = old_rv
        for check in self.write_checks:
            check(info, new, old)
        if subresource == "status" and (body["metadata"].get("managedFields") or None) not in (
                None, old["metadata"].get("managedFields")):
            new["metadata"]["managedFields"] = body["metadata"]["managedFields"]  # a status apply's ownership
        field_managers.record(info, old, new, timestamp(self.clock()), subresource)
        if new == old:
            return old  # a no-op write: no new resourceVersion, no event (like kube-apiserver)
        if dry_run:
            return new
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return await remove(self, info, new, "Background", int(old_rv))
        converted = conversion.converts(info) and subresource != "status" and not new["metadata"].get(
            "deletionTimestamp")
        if converted:
            await conversion.check(self, info, new)
        stored = await self.store.update(resource_key(info), new, int(old_rv))
        if converted:
            await conversion.sync(self, info, stored)
        return stored

    async def patch(self, info: KindInfo, namespace: str, name: str, content_type: str, patch: Any,
                    subresource: str = "", dry_run: bool = False) -> Obj:
        if content_type.split(";")[0].strip().lower() == field_managers.APPLY_TYPE:
            return await field_managers.server_side_apply(self, info, namespace, name, patch,
                                                          field_managers.FORCE.get(), subresource, dry_run)
        wanted = _patch_precondition(patch)

        async def attempt() -> Obj:
            old = await self._fresh(info, namespace, name, wanted)
            if content_type.split(";")[0].strip().lower() == STRATEGIC:
                patched = strategic_merge(info, copy_obj(old), patch)  # by the kind's patch-merge keys
            else:
                patched = apply_patch(content_type, copy_obj(old), patch)
            if not isinstance(patched, dict):
                raise st.bad_request("the patch did not produce a JSON object")
            meta = patched.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise st.invalid(info, name, [("metadata", "must be an object")])
            if meta.get("resourceVersion") is None:
                meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            if meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise st.stale(info, name)
            body = self._envelope(info, namespace, patched, name)
            return await self._update_from(info, old, body, subresource, dry_run)

        return await self._retrying(attempt, bool(wanted), info, name)

    async def delete(self, info: KindInfo, namespace: str, name: str, options: Obj | None = None,
                     dry_run: bool = False) -> Obj:
        options = options or {}
        pre = options.get("preconditions") or {}
        wanted = pre.get("resourceVersion")

        async def attempt() -> Obj:
            obj = await self._fresh(info, namespace, name, wanted)
            return await delete_object(self, info, obj, options, dry_run)

        return await self._retrying(attempt, bool(wanted), info, name)

    # -- pods ----------------------------------------------------------------------------

    async def bind(self, namespace: str, pod_name: str, body: Any) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict) or not body["target"].get("name"):
            raise st.invalid(PODS, pod_name, [("target.name", "Required value")])
        node = body["target"]["name"]

        async def attempt() -> Obj:
            pod = self.get(PODS, namespace, pod_name)
            current = (pod.get("spec") or {}).get("nodeName")
            if current:
                raise st.conflict(PODS, pod_name, f'pod {pod_name} is already assigned to node "{current}"')
            if pod["metadata"].get("deletionTimestamp"):
                raise st.conflict(PODS, pod_name, f"pod {pod_name} is being deleted, cannot be assigned to a host")
            bound = copy_obj(pod)
            bound.setdefault("spec", {})["nodeName"] = node
            conditions = [c for c in bound.setdefault("status", {}).get("conditions") or []
                          if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True",
                               "lastTransitionTime": timestamp(self.clock())})
            bound["status"]["conditions"] = conditions
            return await self.store.update(resource_key(PODS), bound, int(pod["metadata"]["resourceVersion"]))

        await self._retrying(attempt, False, PODS, pod_name)

    async def evict(self, namespace: str, pod_name: str, body: Any) -> None:
        options = body.get("deleteOptions") if isinstance(body, dict) else None
        await self.delete(PODS, namespace, pod_name, options if isinstance(options, dict) else None)


def _patch_precondition(patch: Any) -> str | None:
    """The resourceVersion a patch itself states (a precondition), if any."""
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        value = meta.get("resourceVersion") if isinstance(meta, dict) else None
        return str(value) if value else None
    if isinstance(patch, list):
        for op in patch:
            if isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" and op.get("value"):
                return str(op["value"])
    return None
