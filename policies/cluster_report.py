"""The Cluster object a member agent registers and reports, built from its nodes and pods.

The agent (``member_agent/sync.py``) registers :func:`cluster_registration` and patches the
status :func:`policies.capacity_summary.cluster_status` computes plus :func:`ready_condition`
(docs/protocol.md, "Cluster status"). ``caldera place`` accepts the agent's cluster layout files
(``examples/clusters/*.yaml``) by calling :func:`idle_cluster`: the same registration and the
same status, for the layout's nodes with no pods on them, which is what ``caldera agent --sim
FILE`` reports right after it starts. The federation may not import the agent, so this lives in
``policies``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from policies.capacity import NodeState
from policies.capacity_summary import cluster_status
from policies.cluster_layout import ClusterFile
from policies.errors import InvalidConfiguration
from policies.topology_report import single_domain_report
from policies.wire_objects import Obj

CLUSTER_API_VERSION = "cluster.karmada.io/v1alpha1"
#: the ``status.kubernetesVersion`` a ``--sim`` agent reports
SIM_KUBERNETES_VERSION = "v1.30.0-caldera-sim"


def cluster_registration(name: str, described: Mapping[str, Any]) -> Obj:
    """The Cluster the agent creates: Pull mode, and ``provider``/``region``/``zone``/``labels``
    as the cluster file (or the agent's flags) describe the cluster."""
    spec: dict[str, Any] = {"syncMode": "Pull"}
    for key in ("provider", "region", "zone"):
        if described.get(key):
            spec[key] = described[key]
    if described.get("zone"):
        spec["zones"] = [described["zone"]]
    labels = {str(k): str(v) for k, v in (described.get("labels") or {}).items()}
    return {"apiVersion": CLUSTER_API_VERSION, "kind": "Cluster",
            "metadata": {"name": name, "labels": labels}, "spec": spec}


def ready_condition(since: Optional[str]) -> Obj:
    """The agent's Ready condition. ``since`` is when this agent first reported it (the federation's
    readiness damping counts from there); None says it has held for longer than any damping."""
    condition: Obj = {"type": "Ready", "status": "True", "reason": "ClusterReady",
                      "message": "cluster is healthy and ready to accept workloads"}
    if since is not None:
        condition["lastTransitionTime"] = since
    return condition


def idle_cluster(layout: ClusterFile, source: str = "<cluster file>") -> Obj:
    """The Cluster, status included, that ``caldera agent --sim`` reports for ``layout`` before any
    pod runs: Ready (held long enough), the exact node shapes, the resource summary."""
    if not layout.name:
        raise InvalidConfiguration(f"{source}: name: required to derive a Cluster (the agent takes it from --cluster)")
    described = {"provider": layout.provider, "region": layout.region, "zone": layout.zone, "labels": layout.labels}
    cluster = cluster_registration(layout.name, described)
    status = cluster_status(NodeState(layout.nodes, []), [])
    if not layout.hyper_nodes:  # one domain; with HyperNodes the agent ranks the domains (its tree)
        status["topology"] = single_domain_report()
    status["conditions"] = [ready_condition(None)]
    status["kubernetesVersion"] = SIM_KUBERNETES_VERSION
    cluster["status"] = status
    return cluster
