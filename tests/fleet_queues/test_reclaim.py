"""Cross-cluster reclaim scenarios as data (tests/data/fleet_queues/reclaim.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from federation.fleet_queues.reclaim import Placed, may_preempt, plan_reclaim
from tests.conftest import DATA
from tests.fleet_queues.builders import vec
from tests.fleet_queues.reclaim_builders import ledger, placed, reclaimer

CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "fleet_queues" / "reclaim.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_scenario(case: dict[str, Any]) -> None:
    gangs = [placed(p) for p in case["placed"]]
    waiting = reclaimer(case["reclaimer"])
    fleet = ledger(case["queues"], case["total"], gangs, waiting)
    free = {name: dict(vec(amounts)) for name, amounts in case["free"].items()}
    plan = plan_reclaim(fleet.attrs(), waiting, gangs, free)
    if "reason" in case:
        assert plan.victims == (), plan
        assert case["reason"] in plan.reason
        return
    assert [name for _, name in plan.victims] == case["victims"], plan.reason
    touched = sorted({c for e in plan.evictions for c in e.victim.clusters})
    assert touched == case["clusters"]
    for queue, (before, after) in (case.get("shares") or {}).items():
        assert plan.shares[queue] == (pytest.approx(before, abs=0.01), pytest.approx(after, abs=0.01))
    for eviction in plan.evictions:  # the Event names the reclaimer, the victim and both queues' shares
        assert f"reclaimed by ns/{waiting.key[1]} of queue {waiting.queue} (share " in eviction.message
        assert f"ns/{eviction.victim.key[1]} " in eviction.message
        assert f"from queue {eviction.victim.queue} (share " in eviction.message


def _gang(name: str, queue: str, gpus: int, priority: int = 0, preemptable: bool = True) -> Placed:
    return placed({"name": name, "queue": queue, "priority": priority, "preemptable": preemptable,
                   "usage": {"c1": {"nvidia.com/gpu": str(gpus)}}})


@pytest.mark.parametrize("victims, allowed", [
    (["same"], True),              # same queue: priority alone decides (Volcano's preempt)
    (["over"], True),              # another queue above its deserved share: as reclaim would take it
    (["over", "over2"], False),    # two would take that queue below its deserved share
    (["guaranteed"], False),       # its queue would drop below its guarantee
    (["pinned"], False),           # volcano.sh/preemptable: "false"
])
def test_binding_preemption_respects_queues(victims: list[str], allowed: bool) -> None:
    # deserved 16 each of 48; o holds 24 (one gang of 8 may go), g 20 with a guarantee of 10
    gangs = {g.key[1]: g for g in [
        _gang("same", "p", 8), _gang("pinned", "p", 8, preemptable=False), _gang("over", "o", 8),
        _gang("over2", "o", 8), _gang("over3", "o", 8), _gang("guaranteed", "g", 12), _gang("g2", "g", 8)]}
    waiting = reclaimer({"name": "hi", "queue": "p", "pods": [[{"nvidia.com/gpu": "8"}, 1]]})
    queues = [{"metadata": {"name": "p"}}, {"metadata": {"name": "o"}},
              {"metadata": {"name": "g"}, "spec": {"guarantee": {"resource": {"nvidia.com/gpu": "10"}}}}]
    fleet = ledger(queues, {"nvidia.com/gpu": "48"}, list(gangs.values()), waiting)
    assert may_preempt(fleet.attrs(), "p", [gangs[v] for v in victims]) is allowed
