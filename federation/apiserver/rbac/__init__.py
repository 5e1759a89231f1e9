"""RBAC for the federation API: the evaluator (pure), the bootstrap policy, the authorizer, the
agent restriction and escalation prevention. :func:`install` wires them into a running server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from federation.apiserver.rbac.authorizer import Authorizer
from federation.apiserver.rbac.bootstrap import bootstrap_objects
from federation.apiserver.rbac.escalation import EscalationCheck
from federation.apiserver.status import ApiError

if TYPE_CHECKING:
    from federation.apiserver.registry import Registry

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


async def reconcile_bootstrap(registry: "Registry") -> None:
    """Create the bootstrap roles and bindings; put back those still marked autoupdate."""
    from federation.apiserver.registry import resource_key
    from policies.kinds import lookup

    for wanted in bootstrap_objects():
        info = lookup(wanted["apiVersion"], wanted["kind"])
        name = wanted["metadata"]["name"]
        current = registry.store.get(resource_key(info), "", name)
        if current is None:
            try:
                await registry.create(info, "", wanted)
            except ApiError as exc:
                if exc.code != 409:  # another replica starting at the same time made it
                    raise
            continue
        if (current["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false":
            continue
        body = {k: v for k, v in wanted.items() if k != "metadata"}
        if any(current.get(k) != v for k, v in body.items()):
            await registry.update(info, "", name, dict(body, metadata=current["metadata"]))


async def install(registry: "Registry") -> Authorizer:
    """The authorizer for ``registry``'s store, with escalation checks on RBAC writes."""
    await reconcile_bootstrap(registry)
    authorizer = Authorizer(registry.store)
    registry.write_checks.append(EscalationCheck(authorizer))
    return authorizer
