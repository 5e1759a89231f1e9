"""The agent's HTTP endpoints: ``/healthz``, ``/readyz``, ``/metrics``, ``/status`` and, for a
simulated cluster, fault injection (``POST /sim/nodes/<name>/fail|recover|cordon|uncordon``)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from aiohttp import web

from member_agent.agent import Agent
from member_agent.cluster.gateway import NotFound, pod_node
from member_agent.cluster.sim import SimCluster
from member_agent.metrics import CONTENT_TYPE
from member_agent.sync import FederationSync
from member_agent.works import GENERATION_LABEL


def status_document(agent: Agent, sync: Optional[FederationSync]) -> dict[str, Any]:
    works = {}
    for key, state in agent.works.items():
        works[key] = {
            "uid": state.record.uid,
            "generation": state.record.placement.generation,
            "hold": state.record.placement.hold,
            "error": state.record.error or state.controller_error,
            "jobPhase": ((state.job_status.get("state") or {}).get("phase")),
            "podGroupPhase": ((state.podgroup or {}).get("status") or {}).get("phase"),
            "gang": state.gang.status(),
            "reservations": dict(state.gang.reservations),
            "pods": len(agent.pods_of(state.record)),
            "clusters": state.record.placement.clusters,
            # pods whose containers run (a terminating one still runs until its grace ends), by the
            # placement generation they were created for (the chaos checks read it)
            "runningByGeneration": dict(Counter(
                str(((p.get("metadata") or {}).get("labels") or {}).get(GENERATION_LABEL, "0"))
                for p in agent.pods_of(state.record) if (p.get("status") or {}).get("phase") == "Running")),
            "fenced": state.fenced_reason or None,
            "deferredActions": len(state.run.deferred) if state.run is not None else 0,
        }
    return {
        "cluster": agent.options.cluster,
        "nodes": len(agent.cache.nodes),
        "pods": len(agent.cache.pods),
        "boundPods": sum(1 for p in agent.cache.pods.values() if pod_node(p)),
        "podPhases": dict(Counter(str((p.get("status") or {}).get("phase") or "") for p in agent.cache.pods.values())),
        "synced": agent.cache.synced.is_set(),
        "leading": agent.leading,
        "federationConnected": bool(sync and sync.connected),
        "federationEndpoint": getattr(sync.api, "current", None) if sync else None,
        "leaseRenewals": sync.lease_renewals if sync else 0,
        "lastCycle": agent.last_cycle,
        "schedulerActions": list(agent.conf.actions),
        "works": works,
        "fence": (dict(agent.fence.report(), unreachableForSeconds=round(agent.fence.unreachable_for(), 3))
                  if agent.fence is not None else None),
        # "ns/pod" -> {"gpus": [ids], "numa": [ids]}: what the sessions gave the pods still present.
        "devices": dict(sorted(agent.writes.devices.items())),
        # the member's HyperNodes and what is wrong with them as a whole (a cycle, a node claimed twice)
        "hyperNodes": len(agent.hyper_nodes),
        "topologyProblems": list(agent.topology.problems),
        # each HyperNode's status (nodeCount, conditions): the only place a --sim or label-built one shows it
        "hyperNodeStatus": dict(sorted(agent.topology.status.items())),
        "nominations": {key: nominee for key, pod in sorted(agent.cache.pods.items())
                        if (nominee := (pod.get("status") or {}).get("nominatedNodeName")) and not pod_node(pod)},
    }


def build_app(agent: Agent, sync: Optional[FederationSync], sim: Optional[SimCluster],
              plain_metrics: bool = True) -> web.Application:
    """The plain-HTTP endpoints; ``plain_metrics`` False when /metrics is served securely elsewhere."""
    app = web.Application()

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ready = agent.cache.synced.is_set() and (sync is None or sync.connected)
        return web.Response(text="ok" if ready else "not ready", status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        if not plain_metrics:
            return web.Response(status=404, text="/metrics is served over HTTPS at --metrics-bind-address\n")
        return web.Response(body=agent.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def status(_: web.Request) -> web.Response:
        return web.json_response(status_document(agent, sync))

    async def node_action(request: web.Request) -> web.Response:
        if sim is None:
            return web.json_response({"error": "fault injection needs a simulated cluster (--sim)"}, status=404)
        name, action = request.match_info["name"], request.match_info["action"]
        try:
            if action == "fail":
                sim.fail_node(name, request.query.get("reason", "NodeFailure"))
            elif action == "recover":
                sim.recover_node(name)
            elif action in ("cordon", "uncordon"):
                sim.cordon(name, action == "cordon")
            else:
                return web.json_response({"error": f"unknown action {action!r}; use fail, recover, cordon, uncordon"},
                                         status=400)
        except NotFound as exc:
            return web.json_response({"error": str(exc)}, status=404)
        return web.json_response({"node": name, "action": action})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/status", status)
    app.router.add_post("/sim/nodes/{name}/{action}", node_action)
    return app
