"""The session's HyperNode accounting kept incrementally equals the same figures computed from
scratch: per-HyperNode sums, the room per request, the LCA of rows and the closeness score, after
any sequence of placements, pipelines and undos (with every node in a leaf, and with some in none)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from member_agent.scheduler import build_snapshot
from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.hypernode_state import HyperNodeState, state_of
from member_agent.scheduler.framework.status import TaskStatus
from policies.scheduler_conf import parse_scheduler_conf

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
""")
NODES = 24
SHAPES = ({"cpu": "2", "nvidia.com/gpu": "1"}, {"cpu": "6", "memory": "4Gi", "nvidia.com/gpu": "4"},
          {"cpu": "1", "memory": "1Gi"})


def hypernode(name: str, tier: int, kind: str, members: list[str]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


def objects(covered: bool) -> list[dict]:
    """24 nodes under leaves of 4 and spines of 2 leaves; ``covered=False``: the last leaf is
    left out, so 4 nodes sit in no HyperNode below the top."""
    objs: list[dict] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}"},
                         "status": {"allocatable": {"cpu": str(8 + i % 3 * 8), "memory": "64Gi", "pods": "20",
                                                    "nvidia.com/gpu": str(8 if i % 4 else 4)}}}
                        for i in range(NODES)]
    leaves = range(NODES // 4 if covered else NODES // 4 - 1)
    objs += [hypernode(f"leaf{j}", 1, "Node", [f"n{i:02d}" for i in range(4 * j, 4 * j + 4)]) for j in leaves]
    objs += [hypernode(f"spine{s}", 2, "HyperNode", [f"leaf{j}" for j in leaves if j // 2 == s])
             for s in range(3) if any(j // 2 == s for j in leaves)]
    objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "j", "namespace": "default"},
                 "spec": {"minMember": 1, "networkTopology": {"mode": "soft"}}, "status": {"phase": "Inqueue"}})
    for k in range(60):
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"j-w-{k}", "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": "j"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": SHAPES[k % len(SHAPES)]}}]},
            "status": {"phase": "Pending"}})
    return objs


def room_from_scratch(state: HyperNodeState, smallest: np.ndarray) -> np.ndarray:
    ssn = state.ssn
    future = ssn.idle + ssn.releasing - ssn.pipelined
    dims = np.flatnonzero(smallest >= 0.1)
    per_row = np.floor((future[:, dims] + 0.1) / smallest[dims]).min(axis=1).clip(min=0)
    return np.array([per_row[rows].sum() for rows in state.tree.rows])


def closeness_from_scratch(state: HyperNodeState, home: int, rows: list[int]) -> list[float]:
    """(maxTier − tier(LCA(row, home))) / (maxTier − minTier), 1 in the home leaf, × 100 × weight 1."""
    tree, tiers = state.tree, state.tiers
    home_chain = set(tree.ancestors(home))
    out = []
    for row in rows:
        lca = next(a for a in [*(int(state.chain[lv][row]) for lv in range(len(tiers)))] if a in home_chain)
        score = (tiers[-1] - int(tree.tiers[lca])) / (tiers[-1] - tiers[0])
        out.append(100.0 * (1.0 if int(state.chain[0][row]) == home else score))
    return out


@pytest.mark.parametrize("covered", [True, False])
def test_incremental_accounting_equals_from_scratch(covered: bool) -> None:
    ssn = open_session(build_snapshot(objects(covered)), CONF, FixedClock())
    state = state_of(ssn)
    assert state is not None and state.covered == covered
    job = next(iter(ssn.jobs.values()))
    rng = random.Random(5)
    placed: list = []
    requests = [t.spec.request for t in job.tasks[:len(SHAPES)]]
    for step in range(120):
        pending = [t for t in job.tasks if t.status == TaskStatus.PENDING]
        if placed and (not pending or rng.random() < 0.3):
            ssn.unplace(placed.pop(rng.randrange(len(placed))))
        else:
            task = rng.choice(pending)
            ssn.place(task, rng.randrange(NODES), TaskStatus.PIPELINED if rng.random() < 0.3 else TaskStatus.ALLOCATED)
            placed.append(task)
        if step % 3:
            continue  # let changes pile up between reads, as several jobs' placements do
        smallest = requests[step % len(requests)]
        level = step % (len(state.tiers) - 1)
        cands = state.tree.by_tier[state.tiers[level]]
        assert state.room(level, cands, smallest).tolist() == room_from_scratch(state, smallest)[cands].tolist()
        fresh = HyperNodeState(ssn, state.tree)
        assert np.array_equal(state.sums, fresh.sums)
        rows = rng.sample(range(NODES), rng.randint(1, 6))
        assert state.lca_of_rows(rows) == state.tree.lca_of_rows(rows)


@pytest.mark.parametrize("covered", [True, False])
def test_closeness_to_the_jobs_home(covered: bool) -> None:
    """The job's home grows from a leaf to a spine to the top; every group of candidate rows
    scores as the definition says (0 everywhere for rows of one leaf: it ranks nothing)."""
    ssn = open_session(build_snapshot(objects(covered)), CONF, FixedClock())
    state = state_of(ssn)
    assert state is not None
    job = next(iter(ssn.jobs.values()))
    plugin = ssn.plugins["network-topology-aware"]
    rng = random.Random(3)
    homes = []
    for task, row in zip(job.tasks, (0, 1, 5, 9, 20), strict=False):
        ssn.place(task, row, TaskStatus.ALLOCATED)
        home = state.lca_of_rows([t.node for t in job.tasks if t.node is not None])
        homes.append(state.tree.names[home])
        for _ in range(20):
            rows = sorted(rng.sample(range(NODES), rng.randint(1, 8)))
            got = plugin._closeness(state, job, np.asarray(rows))
            leaves = {int(state.chain[0][r]) for r in rows}
            want = [0.0] * len(rows) if len(leaves) == 1 else closeness_from_scratch(state, home, rows)
            assert got.tolist() == pytest.approx(want)
    assert homes[:3] == ["leaf0", "leaf0", "spine0"] and homes[-1] == "<cluster-top-hypernode>"


def test_domain_searches_leave_every_current_cache_entry_as_a_fresh_evaluation_gives() -> None:
    """Allocate's domain searches mark touched rows not current instead of evaluating them again
    (and evaluate a shape over every row once it searched a few domains): whatever a cache still
    holds as current equals what a fresh cache computes for the session's final state."""
    from member_agent.scheduler.actions.allocate import Allocate
    from member_agent.scheduler.framework.node_search import ShapeCache

    snapshot = build_snapshot(objects(True))
    ssn = open_session(snapshot, CONF, FixedClock())
    Allocate({"predicateErrorCacheEnable": True}).execute(ssn)
    job = next(iter(ssn.jobs.values()))
    assert sum(1 for t in job.tasks if t.node is not None) > 20  # the searches placed pods
    tasks = {t.spec.shape: t for t in job.tasks}
    assert ssn.shape_caches and len(ssn.shape_caches) <= len(tasks)
    for shape, cache in ssn.shape_caches.items():
        cache.refresh(ssn, tasks[shape])
        fresh = ShapeCache(ssn, tasks[shape])
        fresh.ensure_all(ssn, tasks[shape])
        current = np.flatnonzero(cache.evaluated)
        assert len(current) > 0
        for name in ("codes", "fit_idle", "fit_future", "ok"):
            assert getattr(cache, name)[current].tolist() == getattr(fresh, name)[current].tolist(), name
        scored = current[cache.scored[current] & fresh.scored[current]]
        assert cache.score[scored].tolist() == fresh.score[scored].tolist()
