"""Unit tests of the part-2 building blocks: hint merging, topology parsing, durations,
the device ledger across evict/discard, and what ``caldera schedule`` prints."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from member_agent import schedule_cmd
from member_agent.scheduler import build_snapshot
from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.topology import TopologyError, node_topology, parse_topology, pod_extras
from member_agent.scheduler.plugins.deadline import slack_factor
from member_agent.scheduler.plugins.device_ledger import ledger_for
from member_agent.scheduler.plugins.numa_hints import admits, decide, merge, resource_hints
from member_agent.scheduler.plugins.slo_time import parse_duration, parse_instant
from member_agent.scheduler.plugins.tdm import in_window, parse_window
from tests.scheduler.part2_builders import conf, node, pod, pod_group

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"
PART2 = ("preempt", "reclaim", "gangpreempt", "gangreclaim", "numa-aware", "task-topology", "deviceshare", "sla",
         "deadline", "tdm")


def test_part2_scenario_folders_are_populated() -> None:
    counts = {area: len(list((SCENARIOS / area).glob("*.yaml"))) for area in PART2}
    assert all(n >= 5 for n in counts.values()), counts
    assert sum(counts.values()) >= 60


# ---------------------------------------------------------------------------- NUMA hints
@pytest.mark.parametrize(("request_units", "total", "free", "expected"), [
    (4, [4, 4], [4, 4], [(1, True), (2, True), (3, False)]),
    (4, [4, 4], [2, 2], [(3, False)]),
    (8, [4, 4], [4, 4], [(3, True)]),
    (5, [4, 4], [4, 0], []),
])
def test_resource_hints(request_units: int, total: list[int], free: list[int], expected: list[tuple[int, bool]]) -> None:
    assert resource_hints(request_units, total, free) == expected


def test_merge_prefers_preferred_then_narrower() -> None:
    cpu = [(1, True), (2, True), (3, False)]
    gpu = [(2, True), (3, False)]
    assert merge(2, [cpu, gpu]) == (2, True)
    assert merge(2, [cpu, None]) == (1, True)
    assert merge(2, [[], None]) == (3, False)  # a provider that cannot fit: any, not preferred


def test_single_numa_node_drops_multi_node_hints() -> None:
    assert merge(2, [[(3, True)]], single_numa=True) == (3, False)
    assert merge(2, [[(3, True)]]) == (3, True)


@pytest.mark.parametrize(("policy", "hint", "admitted"), [
    ("none", (3, False), True), ("best-effort", (3, False), True),
    ("restricted", (3, False), False), ("restricted", (3, True), True), ("single-numa-node", (1, True), True),
])
def test_policy_admission(policy: str, hint: tuple[int, bool], admitted: bool) -> None:
    assert admits(policy, hint) is admitted


def test_decide_cpu_and_gpu_alignment() -> None:
    decision = decide("restricted", 2, 8, [32, 32], [32, 32], 4, [4, 4], [2, 4])
    assert decision.admitted and decision.numa_ids == (1,)


# ---------------------------------------------------------------------------- topology
def test_topology_annotation_parsed_from_the_simulator_format() -> None:
    topo, problem = node_topology(node("n1", gpus=8, numa=2, policy="restricted"))
    assert problem == "" and topo is not None
    assert topo.topology_manager_policy == "restricted" and topo.cpu_manager_policy == "static"
    assert [n.gpus for n in topo.numa] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert topo.nvlink_domain(5) == 0 and topo.gpus[0].memory_gib == 80


@pytest.mark.parametrize(("text", "message"), [
    ("[]", "must be a JSON object"),
    ('{"version": 2}', "version"),
    ('{"topologyManagerPolicy": "strict"}', "topologyManagerPolicy"),
    ('{"numa": [{"id": 1}]}', "numa[].id"),
    ('{"numa": [{"id": 0, "memory": "lots"}]}', "numa[0].memory"),
    ('{"gpus": [{"id": 0, "numa": "zero"}]}', "gpus[0].numa"),
])
def test_bad_topology_names_the_field(text: str, message: str) -> None:
    with pytest.raises(TopologyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_topology(text)


def test_gfd_labels_without_annotation() -> None:
    raw = {"metadata": {"name": "n", "labels": {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "40960",
                                                 "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-40GB"}},
           "status": {"allocatable": {"nvidia.com/gpu": "2"}}}
    topo, problem = node_topology(raw)
    assert problem == "" and topo is not None and not topo.has_numa
    assert [g.memory_gib for g in topo.gpus] == [40, 40]


def test_guaranteed_qos_needs_equal_cpu_and_memory_limits() -> None:
    both = {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "1Gi"}}
    assert pod_extras({"spec": {"containers": [{"resources": both}]}}).guaranteed
    assert pod_extras({"spec": {"containers": [{"resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}]}}).guaranteed
    assert not pod_extras({"spec": {"containers": [{"resources": {"requests": {"cpu": "4"}}}]}}).guaranteed


# ---------------------------------------------------------------------------- time
@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("1h30m", 5400), ("1.5h", 5400), ("250ms", 0.25), ("0", 0)])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "10", "1x", "h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_instants_and_slack() -> None:
    deadline = parse_instant("2025-06-01T00:00:00Z")
    assert slack_factor(3600, deadline, deadline - 7200) == pytest.approx(0.5)
    assert slack_factor(3600, deadline, deadline + 1) == 1.0
    assert slack_factor(0, deadline, deadline + 1) == 0.0
    with pytest.raises(ValueError, match="RFC 3339"):
        parse_instant("tomorrow")


@pytest.mark.parametrize(("text", "minute", "inside"), [
    ("08:00-20:00", 8 * 60, True), ("08:00-20:00", 20 * 60, False), ("22:00-06:00", 23 * 60, True),
    ("22:00-06:00", 5 * 60 + 59, True), ("22:00-06:00", 12 * 60, False), ("00:00-00:00", 0, True),
])
def test_tdm_windows(text: str, minute: int, inside: bool) -> None:
    assert in_window(parse_window(text), minute) is inside


@pytest.mark.parametrize("text", ["morning", "25:00-01:00", "08:60-09:00", "8-9"])
def test_bad_tdm_windows(text: str) -> None:
    with pytest.raises(ValueError):
        parse_window(text)


# ---------------------------------------------------------------------------- ledger
def test_discarded_eviction_gets_the_same_gpus_back() -> None:
    objects = [node("n1", gpus=2, hami=True), pod_group("old", 1, "default", "Running"),
               pod("old-w-0", "old", {"cpu": "1", "nvidia.com/gpumem": 70, "nvidia.com/gpucores": 50}, "n1",
                   annotations={"volcano.sh/gpu-index": "0"})]
    # preempt evicts: the running job is wrapped (an allocate-only conf would leave it out, quiescent.py)
    ssn = open_session(build_snapshot(objects), conf("allocate, preempt", ["predicates", "deviceshare"]), FixedClock())
    ledger = ledger_for(ssn)
    task = ssn.jobs["default/old"].tasks[0]
    devices = ledger.node(0)
    assert devices is not None and devices.memory_used == [70.0, 0.0]
    stmt = Statement(ssn)
    stmt.evict(task, "test")
    assert devices.memory_used == [0.0, 0.0]
    stmt.discard()
    assert devices.memory_used == [70.0, 0.0] and ledger.held[task.key].gpus == (0,)


# ---------------------------------------------------------------------------- caldera schedule
def test_schedule_table_explains_preemptions_and_devices(capsys: pytest.CaptureFixture[str]) -> None:
    path = SCENARIOS / "preempt" / "evict-only-until-fits.yaml"
    args = schedule_cmd.argparse.Namespace(filename=[str(path)], output="table", conf=None, verbosity=0)
    assert schedule_cmd.run(args) == 0
    out = capsys.readouterr().out
    assert "preempt: evicted team-b/job-x-worker-6 (priority 10 < 1000) for ai-training/critical-training" in out

    path = SCENARIOS / "deviceshare" / "seed-two-pods-share-one-gpu.yaml"
    state = schedule_cmd.load_state([str(path)], None)
    from member_agent.scheduler import run_cycle

    result = run_cycle(state.snapshot, state.conf, FixedClock())
    buffer = io.StringIO()
    schedule_cmd.print_table(result, state, buffer)
    assert "devices default/big-main-0 on n1: gpus 0" in buffer.getvalue()
    doc = json.loads(json.dumps(result.to_json()))
    assert doc["deviceAllocations"]["default/big-main-0"] == {"gpus": [0]}
    assert doc["podAnnotations"]["default/big-main-0"] == {"volcano.sh/gpu-index": "0"}
    assert "evictionReasons" not in doc
