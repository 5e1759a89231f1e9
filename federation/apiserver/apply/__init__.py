"""Server-side apply and managed fields (see :mod:`.managed`, :mod:`.fields`).

Routes set :data:`FIELD_MANAGER` for each write (``?fieldManager=``, else the User-Agent's
program name, as kube does); the registry records ownership on every create and update through
:func:`record`, and ``PATCH`` with ``application/apply-patch+yaml`` goes through :func:`server_side_apply`.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from federation.apiserver import status as st
from federation.apiserver.apply.managed import Manager, apply, new_object, record_update
from federation.apiserver.objects import copy_obj, resource_key, timestamp

if TYPE_CHECKING:
    from datetime import datetime

    from federation.apiserver.storage import Storage
    from policies.kinds import KindInfo

Obj = dict[str, Any]
APPLY_TYPE = "application/apply-patch+yaml"
#: the writer of the request being served; None for the server's own writes
FIELD_MANAGER: ContextVar[Manager | None] = ContextVar("caldera_field_manager", default=None)
SERVER_MANAGER = Manager("caldera-apiserver")
#: ?force=true of the apply request being served
FORCE: ContextVar[bool] = ContextVar("caldera_apply_force", default=False)
#: the configuration being applied (while server_side_apply runs)
APPLIED: ContextVar[Obj | None] = ContextVar("caldera_applied_config", default=None)


class Registry(Protocol):
    """What apply needs of :class:`federation.apiserver.registry.Registry` (which calls it): a
    protocol, so this package needs no import of the registry."""

    store: "Storage"

    def clock(self) -> "datetime": ...

    async def create(self, info: "KindInfo", namespace: str, body: Any, dry_run: bool = False) -> Obj: ...

    async def update(self, info: "KindInfo", namespace: str, name: str, body: Any, subresource: str = "",
                     dry_run: bool = False) -> Obj: ...


def manager_for(field_manager: str | None, user_agent: str, subresource: str, operation: str = "Update") -> Manager:
    name = field_manager or user_agent.split("/", 1)[0].strip() or "unknown"
    return Manager(name, operation, subresource if subresource == "status" else "")


def record(info: "KindInfo", old: Obj | None, new: Obj, now: str, subresource: str = "") -> None:
    who = FIELD_MANAGER.get() or SERVER_MANAGER
    config = APPLIED.get()
    if who.operation == "Apply" and old is None and config is not None:  # apply creates: owns what it applied
        new.setdefault("metadata", {})["managedFields"] = new_object(config, who, now, info.has_status)[
            "metadata"]["managedFields"]
        return
    if who.operation != "Apply" and subresource != who.subresource:
        who = Manager(who.name, who.operation, subresource if subresource == "status" else "")
    record_update(old, new, who, now, info.has_status)
    if old is not None:
        _keep_times_of_a_no_op(old, new)


def _check_config(info: "KindInfo", namespace: str, name: str, config: Any) -> Obj:
    if not isinstance(config, dict):
        raise st.bad_request("the apply patch must be a whole object (apiVersion, kind, metadata.name), got "
                             f"{type(config).__name__}")
    text = repr(config)[:200]
    if not config.get("kind"):
        raise st.bad_request(f"error decoding YAML: Object 'Kind' is missing in '{text}'")
    if not config.get("apiVersion"):
        raise st.bad_request(f"error decoding YAML: Object 'apiVersion' is missing in '{text}'")
    if config["apiVersion"] != info.api_version or config["kind"] != info.kind:
        raise st.bad_request(f"the apply patch is a {config['apiVersion']}/{config['kind']}, the URL names a "
                             f"{info.api_version}/{info.kind}")
    meta = config.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise st.bad_request("the apply patch must name the object: metadata.name is missing")
    if meta["name"] != name:
        raise st.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    if meta.get("managedFields"):
        raise st.bad_request("metadata.managedFields must be nil in an apply patch")
    return config


async def server_side_apply(registry: Registry, info: "KindInfo", namespace: str, name: str, config: Any,
                      force: bool, subresource: str, dry_run: bool) -> Obj:
    config = _check_config(info, namespace, name, config)
    writer = FIELD_MANAGER.get()
    if writer is None:
        raise st.ApiError(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                          "is required for apply patch")
    who = Manager(writer.name, "Apply", subresource if subresource == "status" else "")
    live = registry.store.get(resource_key(info), namespace if info.namespaced else "", name)
    token = FIELD_MANAGER.set(who)
    applied_token = APPLIED.set(config)
    try:
        if live is None:
            if subresource:
                raise st.not_found(info, name)
            return await registry.create(info, namespace, copy_obj(config), dry_run)
        now = timestamp(registry.clock())
        result = apply(live, config, who, force, now, info.has_status)
        if _without_managed(result) == _without_managed(live):
            result["metadata"]["managedFields"] = live["metadata"].get("managedFields") or result["metadata"][
                "managedFields"]
        result["metadata"]["resourceVersion"] = (config.get("metadata") or {}).get(
            "resourceVersion") or live["metadata"]["resourceVersion"]
        return await registry.update(info, namespace, name, result, subresource, dry_run)
    finally:
        FIELD_MANAGER.reset(token)
        APPLIED.reset(applied_token)


def _keep_times_of_a_no_op(old: Obj, new: Obj) -> None:
    """kube-apiserver's IgnoreManagedFieldsTimestampsTransformer: a write whose object, after defaulting and
    admission, equals the stored one and whose managedFields differ only in their timestamps keeps the stored
    managedFields, so it is a no-op (no new resourceVersion, no event). Re-applying a Volcano Job whose atomic
    ``spec.tasks`` the admission defaults otherwise moved the resourceVersion once the clock's second ticked."""
    before = (old.get("metadata") or {}).get("managedFields")
    after = (new.get("metadata") or {}).get("managedFields")
    if not before or not after or before == after or len(before) != len(after):
        return
    if any(_untimed(a) != _untimed(b) for a, b in zip(before, after, strict=True)):
        return
    if _without_managed(new) == _without_managed(old):
        new["metadata"]["managedFields"] = before


def _untimed(entry: Any) -> Any:
    return {k: v for k, v in entry.items() if k != "time"} if isinstance(entry, dict) else entry


def _without_managed(obj: Obj) -> Obj:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return dict(obj, metadata=meta)
