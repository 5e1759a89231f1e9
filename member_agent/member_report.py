"""Report the member cluster's pods and PodGroups to the federation, incrementally.

The federation serves them read-only at ``/api/v1/pods`` and ``podgroups.scheduling.volcano.sh``
(docs/protocol.md "Member pods"). The agent of cluster ``C`` writes a copy of each pod of its
Works (label ``caldera.io/work-uid``) and each of its PodGroups into ``karmada-es-C``, named
``<namespace>.<name>``. Only what changed is written: the reporter remembers what it last wrote
per object (metadata+spec and status separately) and, after a change in the cluster cache or the
Works, writes the difference; a pod or PodGroup that went is deleted. At start the reporter lists
what the federation holds so a restarted agent neither creates twice nor leaves stale copies.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

import orjson

from member_agent.agent import Agent
from member_agent.cluster.clock import Clock
from member_agent.cluster.gateway import NotFound, Obj
from member_agent.works import GENERATION_LABEL, WORK_UID_LABEL
from policies.models.karmada_work import execution_namespace

log = logging.getLogger("caldera.agent.report")
CACHED_FROM = "resource.karmada.io/cached-from-cluster"
MEMBER_UID = "caldera.io/member-uid"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
KINDS = {"Pod": ("/api/v1", "pods"), "PodGroup": (f"/apis/{PODGROUP_API}", "podgroups")}
#: a change is reported within this long even when no change counter woke the reporter
FALLBACK_PERIOD = 2.0


def _digest(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _copy(obj: Obj, kind: str, cluster: str, extra_labels: dict[str, str]) -> Obj:
    """The raw copy of a member object for ``karmada-es-<cluster>``."""
    meta = obj.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), **extra_labels}
    annotations = {**(meta.get("annotations") or {}), CACHED_FROM: cluster}
    if meta.get("uid"):
        annotations[MEMBER_UID] = str(meta["uid"])
    copy_meta: Obj = {"name": f"{meta.get('namespace') or 'default'}.{meta.get('name')}",
                      "namespace": execution_namespace(cluster), "labels": labels, "annotations": annotations}
    api_version = "v1" if kind == "Pod" else PODGROUP_API
    body: Obj = {"apiVersion": api_version, "kind": kind, "metadata": copy_meta, "spec": obj.get("spec") or {}}
    if obj.get("status") is not None:
        body["status"] = obj["status"]
    return body


class MemberReporter:
    def __init__(self, agent: Agent, api: Any, clock: Clock, settle: float = 0.3) -> None:
        self.agent = agent
        self.api = api
        self.clock = clock
        self.cluster = agent.options.cluster
        self.namespace = execution_namespace(self.cluster)
        self.settle = settle
        #: (kind, raw name) -> (digest of metadata+spec, digest of status) last written; None: unknown
        self.sent: dict[tuple[str, str], Optional[tuple[bytes, bytes]]] = {}
        self.writes = 0
        self.listed = False
        #: writes that failed in the last report (the next period tries them again)
        self.failures = 0

    def _rest(self) -> Any:
        endpoints = getattr(self.api, "endpoints", None)
        return endpoints[self.api.active] if endpoints else self.api

    def _path(self, kind: str, name: str = "", sub: str = "") -> str:
        root, plural = KINDS[kind]
        return "/".join(p for p in (f"{root}/namespaces/{self.namespace}/{plural}", name, sub) if p)

    def desired(self) -> dict[tuple[str, str], Obj]:
        """Every object to report now, keyed by (kind, raw name)."""
        wanted: dict[tuple[str, str], Obj] = {}
        for pod in list(self.agent.cache.pods.values()):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if WORK_UID_LABEL in labels:
                body = _copy(pod, "Pod", self.cluster, {})
                wanted[("Pod", body["metadata"]["name"])] = body
        for state in list(self.agent.works.values()):
            group = state.podgroup
            if group is None or state.deleted:
                continue
            extra = {WORK_UID_LABEL: state.record.uid, GENERATION_LABEL: str(state.record.placement.generation)}
            body = _copy(group, "PodGroup", self.cluster, extra)
            wanted[("PodGroup", body["metadata"]["name"])] = body
        return wanted

    async def list_reported(self) -> None:
        for kind in KINDS:
            listing = await self._rest().request(f"{kind}s in {self.namespace}", "GET", self._path(kind))
            for item in listing.get("items") or []:
                self.sent[(kind, item["metadata"]["name"])] = None
        self.listed = True

    async def _write(self, key: tuple[str, str], body: Obj) -> None:
        kind, name = key
        spec_part = _digest({"metadata": body["metadata"], "spec": body["spec"]})
        status_part = _digest(body.get("status"))
        before = self.sent.get(key, False)
        api = self._rest()
        if before is False:  # not in the federation: create (status included)
            try:
                await api.request(f"{kind} {name}", "POST", self._path(kind), body)
                self.sent[key] = (spec_part, status_part)
                self.writes += 1
                return
            except Exception as exc:  # noqa: BLE001 - created meanwhile (409): update it below
                if "exists" not in str(exc).lower():
                    raise
                before = None
        if before is None or before[0] != spec_part:
            await api.request(f"{kind} {name}", "PUT", self._path(kind, name), {k: v for k, v in body.items()
                                                                                if k != "status"})
            self.writes += 1
        if before is None or before[1] != status_part:
            await api.request(f"{kind} {name} status", "PUT", self._path(kind, name, "status"), body)
            self.writes += 1
        self.sent[key] = (spec_part, status_part)

    async def _delete(self, key: tuple[str, str]) -> None:
        kind, name = key
        try:
            await self._rest().request(f"{kind} {name}", "DELETE", self._path(kind, name))
            self.writes += 1
        except NotFound:
            pass
        self.sent.pop(key, None)

    async def report_once(self) -> int:
        """Write what changed since the last report; the number of objects written or deleted."""
        if not self.listed:
            await self.list_reported()
        wanted = self.desired()
        done = 0
        self.failures = 0
        for key, body in wanted.items():
            before = self.sent.get(key, False)
            if before and before == (_digest({"metadata": body["metadata"], "spec": body["spec"]}),
                                     _digest(body.get("status"))):
                continue
            try:
                await self._write(key, body)
                done += 1
            except NotFound:
                self.sent.pop(key, None)  # deleted meanwhile (or its namespace is not there yet)
            except Exception as exc:  # noqa: BLE001 - the next report tries again
                self.failures += 1
                log.warning("reporting %s %s to the federation failed: %s", key[0], key[1], exc)
        for key in [k for k in self.sent if k not in wanted]:
            try:
                await self._delete(key)
                done += 1
            except Exception as exc:  # noqa: BLE001
                self.failures += 1
                log.warning("removing reported %s %s failed: %s", key[0], key[1], exc)
        return done

    def _state(self) -> tuple[int, tuple[Any, ...]]:
        """What a report depends on, cheaply: the change counter (every pod event bumps it) and each
        PodGroup's phase and counts (written by sessions in the agent's memory)."""
        groups = tuple((key, state.deleted, _digest(state.podgroup) if state.podgroup is not None else b"")
                       for key, state in list(self.agent.works.items()))
        return self.agent.changes.version, groups

    async def run(self) -> None:
        changed = self.agent.changes.subscribe()
        reported: Optional[tuple[int, tuple[Any, ...]]] = None
        while True:
            changed.clear()
            current = self._state()
            if current != reported:  # an idle agent computes no copies and writes nothing
                try:
                    await self.report_once()
                    reported = current if not self.failures else None  # a failed write is tried again
                except Exception as exc:  # noqa: BLE001 - the federation may be away; try again later
                    log.warning("reporting pods to the federation failed: %s", exc)
            tasks = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(self.clock.sleep(FALLBACK_PERIOD))]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
            await self.clock.sleep(self.settle)
