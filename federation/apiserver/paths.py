"""Map a request path to (kind, namespace, name, subresource), the way kube-apiserver does.

``/api/v1/...`` is the core group; ``/apis/{group}/{version}/...`` every other group. Under a
group-version: ``{plural}[/{name}[/{sub}]]`` and ``namespaces/{ns}/{plural}[/{name}[/{sub}]]``.
``namespaces/{ns}/status`` is the Namespace's own subresource, told apart because ``status``
is not a resource name. ``namespaces/{ns}/bindings`` (core) binds a pod named in the body.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.apiserver.status import path_not_found
from policies.kinds import KindInfo, by_resource

SUBRESOURCES = {"status", "binding", "eviction", "finalize", "token"}


@dataclass(frozen=True)
class Target:
    info: KindInfo | None
    #: None on a collection of a namespaced kind across all namespaces; "" for cluster-scoped kinds.
    namespace: str | None
    name: str = ""
    subresource: str = ""
    #: "bindings" for POST /api/v1/namespaces/{ns}/bindings
    special: str = ""

    @property
    def resource_label(self) -> str:
        if self.special:
            return self.special
        if self.info is None:
            return ""
        return self.info.plural + (f"/{self.subresource}" if self.subresource else "")


def is_resource_path(path: str) -> bool:
    """kube's RequestInfo: ``/api/v1/<x>...`` and ``/apis/<g>/<v>/<x>...`` name resources; shorter
    API paths (discovery) and everything else are non-resource URLs."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        return len(parts) >= 3
    if parts[:1] == ["apis"]:
        return len(parts) >= 4
    return False


def parse(group: str, version: str, rest: list[str], path: str) -> Target:
    def kind(plural: str) -> KindInfo:
        info = by_resource(group, version, plural)
        if info is None:
            raise path_not_found(path)
        return info

    def check_sub(info: KindInfo, sub: str) -> str:
        allowed = {"status"} if info.has_status or info.kind == "Namespace" else set()
        if info.kind == "Pod":
            allowed |= {"binding", "eviction", "log"}
        if info.kind == "Namespace":
            allowed.add("finalize")
        if info.kind == "ServiceAccount":
            allowed.add("token")
        if sub not in allowed:
            raise path_not_found(path)
        return sub

    if not rest:
        raise path_not_found(path)
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in SUBRESOURCES:
        namespace, plural, tail = rest[1], rest[2], rest[3:]
        if group == "" and plural == "bindings" and not tail:
            return Target(None, namespace, special="bindings")
        info = kind(plural)
        if not info.namespaced or len(tail) > 2:
            raise path_not_found(path)
        name = tail[0] if tail else ""
        sub = check_sub(info, tail[1]) if len(tail) == 2 else ""
        return Target(info, namespace, name, sub)
    info = kind(rest[0])
    if len(rest) > 3:
        raise path_not_found(path)
    name = rest[1] if len(rest) >= 2 else ""
    sub = check_sub(info, rest[2]) if len(rest) == 3 else ""
    if info.namespaced:
        if name:  # /apis/g/v/jobs/x is not a path: namespaced objects live under namespaces/
            raise path_not_found(path)
        return Target(info, None)
    return Target(info, "", name, sub)
