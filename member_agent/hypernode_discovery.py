"""The member cluster's HyperNodes: read from its API server, and built from node labels.

A real member cluster may hold ``topology.volcano.sh/v1alpha1`` HyperNodes (written by an
operator or by Volcano's own discovery); :func:`hypernode_loop` lists them every period
(a cluster that does not serve the kind has none) and writes back the status of each (nodeCount,
conditions; member_agent/hypernode_status.py) when it changes. Like Volcano's label discovery (its legacy
``networkTopologyTypes`` list form), the agent can also build HyperNodes from node labels
(``--hypernode-label-keys``): the keys from the highest network domain down, optionally ending
with ``kubernetes.io/hostname`` (the node level, which makes no HyperNode), e.g.
``volcano.sh/hypercluster,volcano.sh/hypernode,kubernetes.io/hostname``. Tiers count from the
bottom: every distinct value of the lowest key becomes a tier-1 HyperNode named after the value,
whose members are the nodes carrying it (``exactMatch``); every value of the key above a tier-2
HyperNode whose members are the tier-1 HyperNodes of its nodes, and so on. The ``tierName`` is the
label key (so ``highestTierName: volcano.sh/hypernode`` works); generated HyperNodes carry the
label ``volcano.sh/network-topology-source: label``. A node without a tier's label is in no
HyperNode of that tier. A listed HyperNode wins over a discovered one of the same name.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Iterable, Optional, Sequence

from member_agent.cluster.gateway import GatewayError, Obj

log = logging.getLogger("caldera.agent")
API_VERSION = "topology.volcano.sh/v1alpha1"
_INVALID = re.compile(r"[^a-z0-9-]+")


NODE_LEVEL = "kubernetes.io/hostname"


def _name(tier: int, value: str, taken: dict[str, int]) -> str:
    """The label value as the HyperNode's name (made a valid name); ``-t<tier>`` when another
    tier already uses it."""
    name = (_INVALID.sub("-", value.lower()).strip("-") or "empty")[:240]
    if taken.setdefault(name, tier) != tier:
        name = f"{name}-t{tier}"
    return name


def _hypernode(name: str, tier: int, tier_name: str, kind: str, members: Iterable[str]) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "HyperNode",
            "metadata": {"name": name, "labels": {"volcano.sh/network-topology-source": "label"}},
            "spec": {"tier": tier, "tierName": tier_name,
                     "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in sorted(members)]}}


def discover_from_labels(nodes: Iterable[Obj], tier_keys: Sequence[str]) -> list[Obj]:
    """HyperNodes from node labels, the keys from the highest domain down (Volcano's order)."""
    keys = [k for k in tier_keys if k != NODE_LEVEL]
    out: list[Obj] = []
    taken: dict[str, int] = {}
    below: dict[str, str] = {}  # node name -> its HyperNode of the tier below
    node_list = sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name")))
    for tier, key in enumerate(reversed(keys), start=1):
        groups: dict[str, set[str]] = {}
        current: dict[str, str] = {}
        for node in node_list:
            meta = node.get("metadata") or {}
            name = str(meta.get("name"))
            value = (meta.get("labels") or {}).get(key)
            if not value:
                continue
            hyper = _name(tier, str(value), taken)
            current[name] = hyper
            if tier == 1:
                groups.setdefault(hyper, set()).add(name)
            elif name in below:
                groups.setdefault(hyper, set()).add(below[name])
        for hyper, members in sorted(groups.items()):
            out.append(_hypernode(hyper, tier, key, "Node" if tier == 1 else "HyperNode", members))
        below = current
    return out


def combined(listed: list[Obj], discovered: list[Obj]) -> list[Obj]:
    names = {(h.get("metadata") or {}).get("name") for h in listed}
    return [*listed, *(h for h in discovered if h["metadata"]["name"] not in names)]


async def hypernode_loop(agent: Any, gateway: Any, label_keys: Sequence[str], fixed: list[Obj],
                         period: float = 30.0, stop: Optional[asyncio.Event] = None) -> None:
    """Every ``period``: the cluster file's (``fixed``) and the API server's HyperNodes, plus the
    ones discovered from node labels, handed to the agent (a change reaches the next session)."""
    lister = getattr(gateway, "list_hyper_nodes", None)
    await agent.cache.synced.wait()  # label discovery reads the nodes
    while stop is None or not stop.is_set():
        listed = list(fixed)
        served: list[Obj] = []  # this period's API objects (None of them when the list failed)
        if lister is not None:
            try:
                served = await lister()
                listed.extend(served)
            except GatewayError as exc:
                log.warning("listing HyperNodes: %s; keeping the previous ones", exc)
                listed = agent.hyper_nodes
        discovered = discover_from_labels(agent.cache.nodes.values(), label_keys) if label_keys else []
        agent.set_hyper_nodes(combined(listed, discovered))
        if served and hasattr(gateway, "patch_hyper_node_status"):
            await write_statuses(agent, gateway, served)
        await asyncio.sleep(period)


async def write_statuses(agent: Any, gateway: Any, served: list[Obj]) -> None:
    """Patch the status subresource of each served HyperNode whose status differs from the one
    the agent computes (member_agent/hypernode_status.py), so a write follows a change only; a
    failed write is tried again the next period (the listed status still differs)."""
    from member_agent.hypernode_status import status_changed

    await agent.check_topology()
    for obj in served:
        name = str((obj.get("metadata") or {}).get("name"))
        wanted = agent.topology.status.get(name)
        if wanted is None or not status_changed(obj.get("status"), wanted):
            continue
        try:
            await gateway.patch_hyper_node_status(name, wanted)
        except GatewayError as exc:
            log.warning("writing HyperNode %s status: %s; trying again next period", name, exc)
