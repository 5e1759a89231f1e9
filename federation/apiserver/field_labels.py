"""The field labels each kind can be selected by (``?fieldSelector=``), as kube-apiserver lists them.

Every kind takes ``metadata.name`` and ``metadata.namespace``; the built-in kinds add the fields
kube registers for them (``pkg/apis/core/v1/conversion.go``). Custom resources take the two metadata
fields only, as a CRD without ``selectableFields`` does. Anything else is 400 BadRequest
``field label not supported: <label>``.
"""

from __future__ import annotations

from policies.kinds import KindInfo

META = frozenset({"metadata.name", "metadata.namespace"})

_BY_KIND: dict[tuple[str, str], frozenset[str]] = {
    ("v1", "Pod"): frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                              "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                              "status.podIPs", "status.nominatedNodeName"}),
    ("v1", "Node"): frozenset({"spec.unschedulable"}),
    ("v1", "Namespace"): frozenset({"status.phase"}),
    ("v1", "Event"): frozenset({"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                                "involvedObject.uid", "involvedObject.apiVersion",
                                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                                "reportingComponent", "source", "type"}),
}


def supported(info: KindInfo) -> frozenset[str]:
    return META | _BY_KIND.get((info.api_version, info.kind), frozenset())
