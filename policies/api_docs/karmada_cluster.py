"""Descriptions for ``cluster.karmada.io/v1alpha1`` Cluster (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_LIST = "A resource list: resource name -> quantity."

TYPES: dict[str, str] = {
    "Cluster": "A member cluster of the federation. The administrator writes spec (where it is, its taints); "
               "its agent (Pull mode) writes status: readiness, resources, and on Caldera the free node shapes, "
               "GPUs and queues the federation places gangs with. Cluster-scoped.",
    "ClusterSpec": "How to reach the cluster, where it is, and its taints.",
    "ResourceModel": "One grade of node size used to estimate how many replicas fit.",
    "ResourceModelRange": "The range of one resource that a node of this grade has.",
    "ClusterStatus": "The cluster's observed state, written by its agent (and failoverTiming by the federation).",
    "APIEnablement": "The resources one group-version of the cluster serves.",
    "APIResource": "One served resource.",
    "NodeSummary": "Node counts.",
    "ResourceSummary": "Resource totals of the cluster's nodes.",
    "AllocatableModeling": "How many nodes fall in one resource-model grade.",
    "NodeShape": "Caldera: count nodes with the same free resources and the same placement labels.",
    "PreemptibleShapes": "Caldera: the free node shapes there would be if pods of priority below belowPriority "
                         "were evicted, i.e. what a job of at least that priority could get by preemption.",
    "GPUSummary": "Caldera: GPU totals of one GPU product.",
    "QueueSummary": "Caldera: one Volcano queue's share on this cluster.",
    "FailoverTiming": "Caldera: the graces the federation fails over this cluster with, and its check of the "
                      "agent's fence.",
    "ClusterTopology": "Caldera: how large a gang fits inside one network domain: per tier below the "
                       "cluster's top tier, the free capacity of its roomiest domains.",
    "TopologyTier": "Caldera: the roomiest domains (at most k) of one network tier.",
    "TopologyDomain": "Caldera: one network domain (a HyperNode) and its free capacity as node shapes.",
    "FenceCheck": "Whether the agent's fence is safe against the federation's failover timing.",
    "AgentFence": "Caldera: when the agent stops its re-placeable shares after losing the federation, so that "
                  "a share never runs twice.",
}

FIELDS: dict[str, dict[str, str]] = {
    "Cluster": {"spec": "Specification of the member cluster.",
                "status": "Current status, written by the cluster's agent."},
    "ClusterSpec": {
        "id": "A unique id of the cluster (usually the kube-system namespace's uid).",
        "syncMode": "Push (the control plane applies Works) or Pull (an agent in the cluster does). Caldera's "
                    "agents pull.",
        "apiEndpoint": "The cluster's API server address (Push mode).",
        "secretRef": "The Secret holding the credentials to reach the cluster.",
        "impersonatorSecretRef": "The Secret holding the impersonation token.",
        "insecureSkipTlsVerification": "Skip checking the cluster API server's certificate.",
        "proxyURL": "Proxy to reach the cluster through.",
        "proxyHeader": "Headers sent to the proxy.",
        "provider": "The cloud provider, used by placement field selectors and spread constraints.",
        "region": "The region, used by placement field selectors and spread constraints.",
        "zone": "Deprecated: use zones.",
        "zones": "The zones the cluster spans.",
        "taints": "Taints: policies without a matching clusterToleration keep off (NoSchedule) or leave "
                  "(NoExecute).",
        "resourceModels": "Node size grades used to estimate available replicas.",
    },
    "ResourceModel": {"grade": "The grade's index; higher grades are bigger nodes.",
                      "ranges": "Per resource, the range a node of this grade has."},
    "ResourceModelRange": {"name": "The resource name.", "min": "Lower bound (inclusive).",
                           "max": "Upper bound (exclusive)."},
    "ClusterStatus": {
        "kubernetesVersion": "The cluster's Kubernetes version.",
        "apiEnablements": "The group-versions and resources the cluster serves.",
        "conditions": "Ready (the agent reported within its lease) and others.",
        "nodeSummary": "Total and ready node counts.",
        "resourceSummary": "Allocatable, allocating and allocated resources over all nodes.",
        "remedyActions": "Actions to take on the cluster (e.g. TrafficControl).",
        "nodeShapes": "Caldera: the nodes' free resources, identical nodes grouped.",
        "preemptibleShapes": "Caldera: the free shapes there would be after evicting lower-priority pods, one "
                             "entry per priority threshold (ascending).",
        "gpus": "Caldera: GPUs per product: total, free and fragmented.",
        "numa": "Caldera: the nodes' NUMA layout, as the agent reports it.",
        "queues": "Caldera: each Volcano queue's allocated, deserved, capability and guarantee here.",
        "failoverTiming": "Caldera: written by the federation: the lease, failover and pod termination graces.",
        "fence": "Caldera: written by the agent: the fence it derived.",
        "topology": "Caldera: the free capacity of the roomiest network domains per tier, so the federation "
                    "keeps each share of a topology-constrained gang inside one domain.",
    },
    "ClusterTopology": {
        "k": "How many domains each tier reports at most (the roomiest ones).",
        "topTier": "The cluster's top tier, the whole cluster (its capacity is nodeShapes); 1 for a cluster "
                   "without HyperNodes.",
        "tiers": "The tiers below the top tier, ascending.",
    },
    "TopologyTier": {
        "tier": "The tier number (1 is the closest, e.g. a leaf switch).",
        "tierName": "The tier's name, from the HyperNodes' spec.tierName.",
        "domains": "How many domains the tier has in all (top holds at most k of them).",
        "top": "The roomiest domains of the tier, each with its free capacity.",
    },
    "TopologyDomain": {
        "name": "The HyperNode's name.",
        "nodes": "How many nodes the domain holds.",
        "shapes": "The domain's free resources, identical nodes grouped.",
    },
    "APIEnablement": {"groupVersion": "The group/version.", "resources": "The resources it serves."},
    "APIResource": {"name": "Plural name of the resource.", "kind": "Its kind."},
    "NodeSummary": {"totalNum": "Number of nodes.", "readyNum": "Number of Ready nodes."},
    "ResourceSummary": {
        "allocatable": "Resources the nodes offer to pods. " + _LIST,
        "allocating": "Resources of pods waiting to be scheduled. " + _LIST,
        "allocated": "Resources of pods already placed. " + _LIST,
        "allocatableModelings": "Node counts per resource-model grade.",
    },
    "AllocatableModeling": {"grade": "The grade.", "count": "Nodes in it."},
    "NodeShape": {"count": "How many nodes have this shape.", "free": "Their free resources. " + _LIST,
                  "labels": "Their placement-relevant labels."},
    "PreemptibleShapes": {"belowPriority": "Pods of lower priority than this count as evictable.",
                          "shapes": "The free node shapes after evicting them."},
    "GPUSummary": {"product": "The GPU product (nvidia.com/gpu.product label).", "total": "GPUs in all.",
                   "free": "GPUs not allocated.",
                   "fragmented": "Free GPUs on partly used nodes, unusable by a job that wants whole nodes."},
    "QueueSummary": {"name": "The queue.", "allocated": "What its pods use here. " + _LIST,
                     "deserved": "Its deserved share here.", "capability": "Its cap here.",
                     "guarantee": "Its guarantee here."},
    "FailoverTiming": {
        "leaseGraceSeconds": "How long after the agent's last lease renewal the cluster turns Unknown.",
        "failoverGraceSeconds": "How long after that its re-placeable shares are placed elsewhere.",
        "podTerminationGraceSeconds": "Grace given to the stopped pods.",
        "fenceCheck": "Whether the agent's fence fits inside these graces.",
    },
    "FenceCheck": {"result": "Safe, Unsafe or Unreported.", "message": "Why, when not Safe."},
    "AgentFence": {
        "enabled": "Whether the agent fences at all.",
        "fenceSeconds": "Seconds without the federation after which re-placeable shares are stopped.",
        "spanningFenceSeconds": "The same for shares of a gang spanning clusters (stopped sooner).",
        "podTerminationGraceSeconds": "Grace given to the stopped pods.",
        "marginSeconds": "Safety margin (one lease renewal) subtracted from the federation's graces.",
        "basis": "federation (derived from the federation's failoverTiming) or defaults.",
        "leaseGraceSeconds": "The lease grace the fence was derived from.",
        "failoverGraceSeconds": "The failover grace the fence was derived from.",
    },
}
