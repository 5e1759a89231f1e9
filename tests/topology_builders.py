"""Clusters whose nodes sit under leaf switches, reported as the agent reports them (status.topology).

Both planes' code meets here, as it does over the API: the agent's report
(``member_agent.topology_status``) is read by the federation's adapter (``cluster_state``).
"""

from __future__ import annotations

from typing import Any, Sequence

from federation.placement.adapters import cluster_state
from federation.placement.request import ClusterState
from member_agent.topology_status import cluster_topology
from policies.capacity import NodeState
from policies.capacity_summary import cluster_status
from policies.cluster_layout import parse_cluster_text
from policies.cluster_report import ready_condition

GPU = "nvidia.com/gpu"


def layout_text(name: str, nodes: int, leaf: int = 4, spine: int = 0) -> str:
    """A cluster file: ``nodes`` nodes of 8 GPUs, leaves of ``leaf`` nodes (none when 0) and spines
    of ``spine`` leaves (none when 0), as ``hyperNodes:``."""
    lines = [f"name: {name}", "pools:", "- name: gpu", f"  count: {nodes}", "  cpu: 64", "  memory: 512Gi",
             "  gpus: {product: NVIDIA-A100-SXM4-80GB, count: 8, memoryGiB: 80}"]
    if leaf:
        lines.append("hyperNodes:")
        leaves = [f"leaf{i}" for i in range((nodes + leaf - 1) // leaf)]
        for i, leaf_name in enumerate(leaves):
            members = "|".join(str(n) for n in range(i * leaf, min(nodes, (i + 1) * leaf)))
            lines += [f"- metadata: {{name: {leaf_name}}}", "  spec: {tier: 1, tierName: leaf, members: "
                      f"[{{type: Node, selector: {{regexMatch: {{pattern: '^{name}-gpu-({members})$'}}}}}}]}}"]
        if spine:
            for s in range(0, len(leaves), spine):
                group = "|".join(leaves[s:s + spine])
                lines += [f"- metadata: {{name: spine{s // spine}}}", "  spec: {tier: 2, tierName: spine, members: "
                          f"[{{type: HyperNode, selector: {{regexMatch: {{pattern: '^({group})$'}}}}}}]}}"]
    return "\n".join(lines) + "\n"


def busy_pod(node: str, gpus: int, i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"busy-{i}", "namespace": "default", "uid": f"busy-{node}-{i}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]},
            "status": {"phase": "Running"}}


def reported_status(text: str, busy: Sequence[tuple[int, int]] = (), k: int = 4) -> tuple[str, dict[str, Any]]:
    """(cluster name, the status the agent reports) with ``busy`` = (node index, GPUs used) pods."""
    layout = parse_cluster_text(text)
    pods = [busy_pod(f"{layout.name}-gpu-{n}", gpus, i) for i, (n, gpus) in enumerate(busy)]
    state = NodeState(layout.nodes, pods)
    status = cluster_status(state, pods)
    status["topology"] = cluster_topology(state, layout.hyper_nodes, k)
    status["conditions"] = [ready_condition(None)]
    return str(layout.name), status


def topo_cluster(name: str, nodes: int, leaf: int = 4, spine: int = 0,
                 busy: Sequence[tuple[int, int]] = (), report: bool = True) -> ClusterState:
    """The federation's view of such a cluster (``report=False``: an agent that sends no topology)."""
    cluster, status = reported_status(layout_text(name, nodes, leaf, spine), busy)
    if not report:
        status.pop("topology")
    return cluster_state({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                          "metadata": {"name": cluster}, "spec": {"syncMode": "Pull"}, "status": status})
