"""Agent restriction: each member agent writes only its own cluster's objects.

RBAC grants every agent (group ``caldera:agents``, role ``caldera:agent``) the verbs an agent
needs on Clusters, Leases and Work status; this narrows them to the agent's own cluster, the way
kube's NodeRestriction narrows the ``system:node`` role to the kubelet's own Node. An agent of
cluster ``c`` (group ``caldera:agent:c``) may write only the Cluster ``c`` (and its status), the
Lease ``karmada-cluster/c``, the election Lease ``caldera-system/caldera-agent-c`` of its replicas
(``--leader-elect --sim``) and the status of Works in ``karmada-es-c``; RBAC can name neither the
object a create makes nor a namespace pattern, hence this check. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from federation.apiserver.rbac.evaluator import Attributes

AGENT_GROUP_PREFIX = "caldera:agent:"
AGENTS_GROUP = "caldera:agents"
LEASE_NAMESPACE = "karmada-cluster"
ELECTION_NAMESPACE = "caldera-system"  # the agent replicas' election Lease (--leader-elect --sim)
#: what an agent reports of its member cluster: pods and PodGroups (federation/apiserver/member_view.py)
MEMBER_REPORTS = frozenset({("", "pods"), ("scheduling.volcano.sh", "podgroups")})
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def agent_cluster(groups: Sequence[str]) -> str | None:
    for group in groups:
        if group.startswith(AGENT_GROUP_PREFIX) and len(group) > len(AGENT_GROUP_PREFIX):
            return group.removeprefix(AGENT_GROUP_PREFIX)
    return None


def restrict(attrs: Attributes, object_name: str) -> str | None:
    """Why an agent may not make this (RBAC-allowed) write, or None. ``object_name`` is the
    object's name, taken from the body for a create."""
    cluster = agent_cluster(attrs.groups)
    if cluster is None or attrs.verb not in WRITES or not attrs.resource_request:
        return None
    own = (f"agent of cluster {cluster!r} may only write its own Cluster, its Leases {LEASE_NAMESPACE}/{cluster} "
           f"and {ELECTION_NAMESPACE}/caldera-agent-{cluster}, "
           f"the status of Works in karmada-es-{cluster}, and Events")
    if attrs.api_group == "cluster.karmada.io" and attrs.resource == "clusters":
        return None if object_name == cluster else own
    if attrs.api_group == "coordination.k8s.io" and attrs.resource == "leases":
        if attrs.namespace == LEASE_NAMESPACE and object_name == cluster:
            return None
        election = attrs.namespace == ELECTION_NAMESPACE and object_name == f"caldera-agent-{cluster}"
        return None if election else own
    if attrs.api_group == "work.karmada.io" and attrs.resource == "works":
        return None if attrs.namespace == f"karmada-es-{cluster}" else own
    if (attrs.api_group, attrs.resource) in MEMBER_REPORTS:  # its reported pods/PodGroups (docs/protocol.md)
        return None if attrs.namespace == f"karmada-es-{cluster}" else (
            f"agent of cluster {cluster!r} may only report pods and PodGroups in karmada-es-{cluster}")
    return None
