"""Descriptions for ``topology.volcano.sh/v1alpha1`` HyperNode (see :mod:`policies.api_docs`)."""

from __future__ import annotations

TYPES: dict[str, str] = {
    "HyperNode": "A network domain: the nodes behind one switch (tier 1) or the HyperNodes under one spine "
                 "(tier 2 and up). Volcano's network-topology-aware scheduling keeps a gang within as low a "
                 "tier as possible. Cluster-scoped.",
    "HyperNodeSpec": "The domain's tier and its members.",
    "MemberSpec": "One member selector: nodes or HyperNodes, by exact name, regular expression or labels.",
    "MemberSelector": "How members are selected; exactly one of exactMatch, regexMatch and labelMatch.",
    "ExactMatch": "A member chosen by its exact name.",
    "RegexMatch": "Members chosen by a regular expression over their names.",
    "HyperNodeStatus": "The domain's observed state.",
}

FIELDS: dict[str, dict[str, str]] = {
    "HyperNode": {"spec": "Specification of the network domain: tier and members.",
                  "status": "Current status of the domain. Read-only for users."},
    "HyperNodeSpec": {
        "tier": "Tier of the domain: 1 for nodes sharing a switch (closest), higher for wider domains.",
        "tierName": "A name for the tier (e.g. leaf, spine), usable in a job's networkTopology.highestTierName.",
        "members": "The members of the domain: nodes (tier 1) or HyperNodes of a lower tier.",
    },
    "MemberSpec": {"type": "Node or HyperNode.", "selector": "Which members of that type belong here."},
    "MemberSelector": {
        "exactMatch": "Select one member by its exact name.",
        "regexMatch": "Select members whose names match a regular expression.",
        "labelMatch": "Select nodes by their labels (only for members of type Node).",
    },
    "ExactMatch": {"name": "The member's name."},
    "RegexMatch": {"pattern": "A regular expression (RE2 syntax) matched against member names."},
    "HyperNodeStatus": {"conditions": "Observations about the domain, written by the member agent: MembersResolved "
                                      "is True, or False with reason TopologyProblem when a problem of the "
                                      "topology (a cycle, a node claimed twice in a tier) names this HyperNode.",
                        "nodeCount": "Number of nodes in the domain, counting those of member HyperNodes "
                                     "(written by the member agent when it changes)."},
}
