"""Discovery documents (``/api``, ``/apis``, ``/apis/{group}[/{version}]``), built from the kind table.

kubectl and client libraries read these to map ``kubectl get vcjob`` to a resource path.
Aggregated discovery is not served: kubectl falls back to these legacy documents when the
answer's content type is plain ``application/json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from policies.kinds import KINDS, KindInfo

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
Obj = dict[str, Any]
#: (group, version) -> resources served outside the kind table (the auth reviews, TokenRequest)
EXTRA: dict[tuple[str, str], list[Obj]] = {}


def register(group_name: str, version: str, resources: list[Obj]) -> None:
    EXTRA.setdefault((group_name, version), []).extend(resources)


def _groups(kinds: Iterable[KindInfo]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for group_name, version in EXTRA:
        if group_name:
            groups.setdefault(group_name, []).append(version)
    for info in kinds:
        if info.group:
            versions = groups.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
    return groups


def _preferred(versions: list[str]) -> str:
    # v1 > v1beta1 > v1alpha2 > v1alpha1: the most stable, then the newest
    def rank(v: str) -> tuple[int, int, int]:
        major = int(v[1:].split("a")[0].split("b")[0] or 0)
        stability = 2 if v[1:].isdigit() else (1 if "beta" in v else 0)
        minor = int(v.rsplit("alpha", 1)[-1] if "alpha" in v else v.rsplit("beta", 1)[-1] if "beta" in v else 0)
        return (stability, major, minor)
    return max(versions, key=rank)


def api_versions(server_address: str) -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def group_doc(group: str, versions: list[str]) -> Obj:
    preferred = _preferred(versions)
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
            "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred}}


def group_list() -> Obj:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [group_doc(g, vs) for g, vs in sorted(_groups(KINDS).items())]}


def group(name: str) -> Obj | None:
    versions = _groups(KINDS).get(name)
    return group_doc(name, versions) if versions else None


def _singular_name(info: KindInfo) -> str:
    """The kind's singular, unless it is another kind's short name (VCJob's ``vcjob`` is Volcano's
    short name for jobs): kubectl prefers resource names over short names, so ``kubectl get vcjob``
    must not find VCJob by its singular."""
    if any(info.singular in other.short_names for other in KINDS if other is not info):
        return info.plural
    return info.singular


def categories(info: KindInfo) -> list[str]:
    """The kind's categories (``kubectl get caldera``, ``kubectl get all``, ``kubectl get karmada-io``);
    the CRDs (crds.py) list the same."""
    if info.group in ("", "coordination.k8s.io", "scheduling.k8s.io"):
        return []
    names = ["caldera", "all"] if info.kind in ("Job", "Work") else ["caldera"]
    if info.group in ("policy.karmada.io", "work.karmada.io"):  # as Karmada's CRDs declare
        names.append("karmada-io")
    return names


def _resource(info: KindInfo) -> list[Obj]:
    main: Obj = {"name": info.plural, "singularName": _singular_name(info), "namespaced": info.namespaced,
                 "kind": info.kind, "verbs": VERBS}
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if categories(info):
        main["categories"] = categories(info)
    out = [main]
    if info.has_status or info.kind == "Namespace":
        out.append({"name": f"{info.plural}/status", "singularName": "", "namespaced": info.namespaced,
                    "kind": info.kind, "verbs": ["get", "patch", "update"]})
    if info.kind == "Pod":
        out.append({"name": "pods/binding", "singularName": "", "namespaced": True, "group": "",
                    "version": "v1", "kind": "Binding", "verbs": ["create"]})
        out.append({"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                    "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    return out


def resource_list(group_name: str, version: str) -> Obj | None:
    kinds = [k for k in KINDS if k.group == group_name and k.version == version]
    extra = EXTRA.get((group_name, version), [])
    if not kinds and not extra:
        return None
    resources = [r for k in kinds for r in _resource(k)] + extra
    if not group_name:
        resources.append({"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding",
                          "verbs": ["create"]})
    gv = f"{group_name}/{version}" if group_name else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
