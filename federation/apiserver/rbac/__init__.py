"""RBAC for the federation API: the evaluator (pure), the bootstrap policy, the authorizer, the
agent restriction and escalation prevention. :func:`install` wires them into a running server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from federation.apiserver.rbac.authorizer import Authorizer
from federation.apiserver.rbac.bootstrap import bootstrap_objects
from federation.apiserver.rbac.escalation import EscalationCheck

if TYPE_CHECKING:
    from federation.apiserver.registry import Registry

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


async def reconcile_bootstrap(registry: "Registry") -> None:
    """Create the bootstrap roles and bindings; put back those still marked autoupdate."""
    from federation.apiserver.status import ApiError

    for wanted in bootstrap_objects():
        try:
            await _reconcile_one(registry, wanted)
        except ApiError as err:  # another replica wrote it first (409): its copy is as good as ours
            if err.code != 409:
                raise


async def _reconcile_one(registry: "Registry", wanted: dict[str, Any]) -> None:
    from federation.apiserver.registry import resource_key
    from policies.kinds import lookup

    info = lookup(wanted["apiVersion"], wanted["kind"])
    name = wanted["metadata"]["name"]
    current = registry.store.get(resource_key(info), "", name)
    if current is None:
        await registry.create(info, "", wanted)
        return
    if (current["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false":
        return
    body = {k: v for k, v in wanted.items() if k != "metadata"}
    if any(current.get(k) != v for k, v in body.items()):
        await registry.update(info, "", name, dict(body, metadata=current["metadata"]))


def install(registry: "Registry") -> Authorizer:
    """The authorizer for ``registry``'s store, with escalation checks on RBAC writes. The server
    then writes the bootstrap policy (:func:`reconcile_bootstrap`) before it listens."""
    authorizer = Authorizer(registry.store)
    registry.write_checks.append(EscalationCheck(authorizer))
    return authorizer
