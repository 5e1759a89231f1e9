"""Fleet queue quantities: proportion's water-filling and capacity's hierarchy (volcano.md §6.6, §6.7)."""

from __future__ import annotations

from federation.fleet_queues import FleetConf, FleetJob, FleetQueue, FleetQueues
from tests.fleet_queues.builders import vec


def _with_requests(conf: FleetConf, total: dict[str, str], queues: list[FleetQueue],
                   requests: dict[str, dict[str, str]]) -> FleetQueues:
    fleet = FleetQueues(conf)
    fleet.set_queues(queues)
    fleet.set_capacity(vec(total))
    for name, request in requests.items():
        fleet.add_job(FleetJob(("ns", name), name, vec(request), vec(request), phase="Inqueue"))
    return fleet


def test_volcano_worked_example_of_water_filling() -> None:
    """total 10 cpu; A weight 1 asks 8, B weight 3 asks 2: B meets at 2, A takes the rest (8)."""
    fleet = _with_requests(FleetConf(plugin="proportion"), {"cpu": "10"},
                           [FleetQueue("A", weight=1), FleetQueue("B", weight=3)],
                           {"A": {"cpu": "8"}, "B": {"cpu": "2"}})
    attrs = fleet.attrs()
    assert attrs["A"].deserved["cpu"] == 8000
    assert attrs["B"].deserved["cpu"] == 2000


def test_water_filling_splits_a_contended_fleet_by_weight_and_caps_by_capability() -> None:
    """64 GPUs, weights 3 : 1, both asking 64: 48 / 16; a capability of 40 caps the first, whose
    leftover goes to the other queue in the next round."""
    queues = [FleetQueue("ai-training", weight=3), FleetQueue("inference", weight=1)]
    fleet = _with_requests(FleetConf(plugin="proportion"), {"nvidia.com/gpu": "64"}, queues,
                           {"ai-training": {"nvidia.com/gpu": "64"}, "inference": {"nvidia.com/gpu": "64"}})
    attrs = fleet.attrs()
    assert (attrs["ai-training"].deserved["nvidia.com/gpu"], attrs["inference"].deserved["nvidia.com/gpu"]) == \
        (48000, 16000)
    queues[0] = FleetQueue("ai-training", weight=3, capability=vec({"nvidia.com/gpu": "40"}))
    fleet.set_queues(queues)
    attrs = fleet.attrs()
    assert attrs["ai-training"].deserved["nvidia.com/gpu"] == 40000
    assert attrs["inference"].deserved["nvidia.com/gpu"] == 24000


def test_real_capability_is_the_fleet_less_other_guarantees_capped_by_capability() -> None:
    queues = [FleetQueue("a", guarantee=vec({"nvidia.com/gpu": "16"})),
              FleetQueue("b", capability=vec({"nvidia.com/gpu": "100"}), guarantee=vec({"nvidia.com/gpu": "8"})),
              FleetQueue("c", capability=vec({"nvidia.com/gpu": "10"}))]
    fleet = _with_requests(FleetConf(plugin="capacity"), {"nvidia.com/gpu": "64"}, queues, {})
    attrs = fleet.attrs()
    assert attrs["a"].real_capability["nvidia.com/gpu"] == 64000 - 24000 + 16000
    assert attrs["b"].real_capability["nvidia.com/gpu"] == 64000 - 24000 + 8000
    assert attrs["c"].real_capability["nvidia.com/gpu"] == 10000


def test_capacity_hierarchy_children_inherit_the_parents_missing_dimensions() -> None:
    queues = [FleetQueue("org", capability=vec({"nvidia.com/gpu": "32", "cpu": "64"})),
              FleetQueue("team", parent="org", capability=vec({"cpu": "16"}), guarantee=vec({"nvidia.com/gpu": "4"})),
              FleetQueue("other", parent="org", guarantee=vec({"nvidia.com/gpu": "8"}))]
    fleet = _with_requests(FleetConf(plugin="capacity", hierarchical=True), {"nvidia.com/gpu": "64", "cpu": "512"},
                           queues, {"team": {"nvidia.com/gpu": "2", "cpu": "2"}})
    attrs = fleet.attrs()
    team = attrs["team"]
    assert team.capability["nvidia.com/gpu"] == 32000  # inherited from org
    assert team.capability["cpu"] == 16000  # its own
    assert team.real_capability["nvidia.com/gpu"] == 32000 - 12000 + 4000
    assert attrs["org"].request["nvidia.com/gpu"] == 2000  # leaf usage counts for the ancestors
    assert attrs["root"].request["nvidia.com/gpu"] == 2000


def test_share_orders_queues_by_allocated_over_deserved() -> None:
    fleet = _with_requests(FleetConf(plugin="capacity"), {"nvidia.com/gpu": "64"},
                           [FleetQueue("a", deserved=vec({"nvidia.com/gpu": "10"})), FleetQueue("b")], {})
    fleet.add_job(FleetJob(("ns", "x"), "a", vec({"nvidia.com/gpu": "5"}), vec({"nvidia.com/gpu": "5"}),
                           phase="Allocated"))
    attrs = fleet.attrs()
    assert attrs["a"].share == 0.5
    assert attrs["b"].share == 1.0  # nothing deserved: best effort
