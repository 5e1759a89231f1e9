"""Issue 35's "Done when": two sim clusters whose 12 nodes sit under leaf switches of 4 (``hyperNodes:``
in e2e/data/topo-{a,b}.yaml), a 1:1 policy, jobs of 8-GPU pods with ``networkTopology``; where each
pod runs is read through the federation (``/api/v1/pods``, ``resource.karmada.io/cached-from-cluster``).

One federation and two agents serve the module; the tests run in order and each uses its own job.
A rerun (conftest.py: an e2e test gets one) first deletes the job its failed attempt left behind.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.harness import DATA, EXAMPLES, JOB, Miss, api, apply, capacity_reported, gpu_job, job, until
from federation.client import ResourceClient
from federation.demo.processes import ClusterSpec, System
from policies.kinds import lookup
from tests.policy_builders import one_to_one_policy

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]
PODS = lookup("v1", "Pod")
CACHED_FROM = "resource.karmada.io/cached-from-cluster"
CONF = EXAMPLES / "scheduler-conf" / "network-topology.conf"
POLICY = one_to_one_policy(["topo-a", "topo-b"])


def leaf_of(node: str) -> int:
    return int(node.rsplit("-", 1)[1]) // 4  # the cluster files' leaves: nodes 0-3, 4-7, 8-11


@pytest.fixture(scope="module")
def topo_system(module_systems: Any) -> System:
    args = ["--scheduler-conf", str(CONF)]
    return module_systems([ClusterSpec("topo-a", DATA / "topo-a.yaml", args),
                           ClusterSpec("topo-b", DATA / "topo-b.yaml", args)])


async def placed_pods(rc: ResourceClient, name: str, count: int) -> Any:
    """(cluster, node) of each running pod of job ``name``, read through the federation, once ``count`` run."""
    items = (await rc.list(PODS, "default", label_selector=f"volcano.sh/job-name={name}")).get("items") or []
    running = [((p["metadata"].get("annotations") or {}).get(CACHED_FROM), p["spec"].get("nodeName"))
               for p in items if (p.get("status") or {}).get("phase") == "Running"]
    return running if len(running) == count else Miss(running)


async def without_leftover(rc: ResourceClient, name: str) -> None:
    """Delete job ``name`` if an earlier attempt of the test created it, and wait until it and its pods
    are gone, so a rerun starts from the state its first attempt saw (not a 409 AlreadyExists)."""
    async def gone() -> Any:
        try:
            await rc.get(JOB, name, "default")
            return Miss(f"job {name} still exists")
        except ApiException as exc:
            if exc.status != 404:
                raise
        items = (await rc.list(PODS, "default", label_selector=f"volcano.sh/job-name={name}")).get("items") or []
        return True if not items else Miss([p["metadata"]["name"] for p in items])

    if await gone():
        return
    try:
        await rc.delete(JOB, name, "default")
    except ApiException as exc:
        if exc.status != 404:
            raise
    await until(gone, 60, f"{name} from an earlier attempt deleted with its pods")


async def start(rc: ResourceClient, system: System, name: str, pods: int, topology: dict[str, Any]) -> None:
    await without_leftover(rc, name)
    clusters = await capacity_reported(rc, system)
    reports = {name: c["status"].get("topology") or {} for name, c in clusters.items()}
    assert all(r.get("topTier") == 2 and [t["domains"] for t in r["tiers"]] == [3] for r in reports.values()), \
        f"each agent reports its three leaves under its top tier 2: {reports}"
    if not (await rc.list(lookup("policy.karmada.io/v1alpha1", "PropagationPolicy"), "default")).get("items"):
        await apply(rc, POLICY)
    await apply(rc, gpu_job(name, pods, 8, 3000, networkTopology=topology))


async def test_four_pods_hard_tier_one_run_in_one_leaf(topo_system: System) -> None:
    async with api(topo_system) as rc:
        await start(rc, topo_system, "leaf-four", 4, {"mode": "hard", "highestTierAllowed": 1})
        pods = await until(lambda: placed_pods(rc, "leaf-four", 4), 120, "leaf-four's 4 pods Running")
    assert len({cluster for cluster, _ in pods}) == 1, f"one cluster: {pods}"
    assert len({leaf_of(node) for _, node in pods}) == 1, f"one leaf: {pods}"


async def test_six_pods_hard_tier_one_stay_pending_saying_why(topo_system: System) -> None:
    async with api(topo_system) as rc:
        await start(rc, topo_system, "leaf-six", 6, {"mode": "hard", "highestTierAllowed": 1})

        async def why() -> Any:
            state = ((await job(rc, "leaf-six")).get("status") or {}).get("state") or {}
            return state if state.get("reason") == "Unschedulable" else Miss(state)

        state = await until(why, 30, "leaf-six Pending with the reason Unschedulable")

        async def event() -> Any:
            items = (await rc.list(lookup("v1", "Event"), "default")).get("items") or []
            found = [e for e in items if e.get("reason") == "FailedScheduling"
                     and (e.get("involvedObject") or {}).get("name") == "leaf-six"]
            return found or Miss([e.get("reason") for e in items])

        (failed, *_) = await until(event, 30, "a FailedScheduling event about leaf-six")
        pods = (await rc.list(PODS, "default", label_selector="volcano.sh/job-name=leaf-six")).get("items")
    assert state["phase"] == "Pending", "the job stays Pending at the federation"
    assert "the roomiest tier-1 domain holds 4 of the job's worker pods" in state["message"], state
    assert "never divided across clusters below the fleet tier 3" in state["message"], state
    assert "tier-1 domain" in failed["message"], failed
    assert not pods, "no pod of it runs anywhere"


async def test_twelve_pods_allowed_a_clusters_top_tier_are_never_split(topo_system: System) -> None:
    async with api(topo_system) as rc:
        await start(rc, topo_system, "one-cluster", 12, {"mode": "hard", "highestTierAllowed": 2})
        pods = await until(lambda: placed_pods(rc, "one-cluster", 12), 120, "one-cluster's 12 pods Running")
        four = await placed_pods(rc, "leaf-four", 4)
    by_cluster = Counter(cluster for cluster, _ in pods)
    assert len(by_cluster) == 1, f"never split across clusters (the 1:1 policy alone gives 6 + 6): {by_cluster}"
    assert four, f"leaf-four still runs its 4 pods: {four!r}"
    assert set(by_cluster) != {four[0][0]}, "the cluster that still has 12 free nodes holds it"
