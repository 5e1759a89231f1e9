"""What the fence needs, persisted in the member cluster, so a restarted agent still fences on time.

An agent restarted during a partition knows no Works and has no monotonic clock from before: it
would count its fence from its start and, with no Work to say which pods are re-placeable, never
stop them. So after every successful renewal the agent writes :meth:`member_agent.fencing.Fence.record`
(the wall time the renewal started, the federation's graces) to the ConfigMap
``caldera-system/caldera-agent-fence-<cluster>`` of its member cluster, and reads it back when its
sync starts (also a standby just elected: both replicas share the record). The pods themselves
carry what a fence decides on (``caldera.io/work-uid``, ``caldera.io/placement-generation`` and
``caldera.io/fence``: ``spanning``, ``single`` or ``never``), so the agent fences them before it
has listed a Work (:func:`member_agent.fenced_works.fence_unknown_shares`).

A ``--sim`` agent *is* its member cluster (its pods end with it), so it keeps nothing.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Optional, Protocol

from member_agent.cluster.gateway import Obj

log = logging.getLogger("caldera.agent.fence")
STORE_NAMESPACE = "caldera-system"
RECORD_KEY = "fence.json"


def store_name(cluster: str) -> str:
    return f"caldera-agent-fence-{cluster}"


class FenceStore(Protocol):
    async def load(self) -> Optional[Obj]:
        """The last record saved (None: none, or unreadable)."""

    async def save(self, record: Obj) -> None:
        """Persist ``record``; raises on failure (the caller logs and goes on)."""


class MemoryFenceStore:
    """A store that outlives an :class:`~member_agent.agent.Agent` object (tests restart agents on it)."""

    def __init__(self) -> None:
        self.record: Optional[Obj] = None
        self.saves = 0

    async def load(self) -> Optional[Obj]:
        return dict(self.record) if self.record is not None else None

    async def save(self, record: Obj) -> None:
        self.record = dict(record)
        self.saves += 1


class ConfigMapFenceStore:
    """The record in a member-cluster ConfigMap (``data["fence.json"]``), through the kube client."""

    def __init__(self, core: Any, gateway: Any, cluster: str) -> None:
        self.core = core  # kubernetes_asyncio CoreV1Api of the member cluster
        self.gateway = gateway  # member_agent.cluster.kube.KubeGateway: apply_object creates or patches
        self.name = store_name(cluster)
        self._exists = False  # once written, later saves are one patch (not a create answered 409)

    async def load(self) -> Optional[Obj]:
        try:
            found = await self.core.read_namespaced_config_map(self.name, STORE_NAMESPACE, _request_timeout=10)
        except Exception as exc:  # noqa: BLE001 - absent (first start) or unreachable: nothing restored
            log.info("no fence record %s/%s to resume from: %s", STORE_NAMESPACE, self.name,
                     getattr(exc, "reason", None) or exc)
            return None
        text = (getattr(found, "data", None) or {}).get(RECORD_KEY)
        try:
            record = json.loads(text) if text else None
        except ValueError:
            log.warning("fence record %s/%s is not JSON; ignoring it", STORE_NAMESPACE, self.name)
            return None
        return record if isinstance(record, dict) else None

    async def save(self, record: Obj) -> None:
        data = {RECORD_KEY: json.dumps(record, sort_keys=True)}
        if self._exists:
            try:
                await self.core.patch_namespaced_config_map(self.name, STORE_NAMESPACE, {"data": data},
                                                            _request_timeout=10)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. deleted by hand: create it again below
                log.info("patching fence record %s/%s failed (%s); writing it whole", STORE_NAMESPACE, self.name,
                         getattr(exc, "reason", None) or exc)
        await self.gateway.apply_object({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": STORE_NAMESPACE,
                         "labels": {"app.kubernetes.io/managed-by": "caldera-agent"}},
            "data": data,
        })
        self._exists = True
