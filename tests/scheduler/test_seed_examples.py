"""The seed's worked examples (tests/data/scenarios/seed/*.yaml), checked beyond their expectations.

The scenario files assert the outcome; these tests assert what the outcome cannot show on its
own: the order of decisions in Volcano's log, that the winner won because of ordering (the
loser fits when the winner is taken away), and that the ConfigMaps in the scenarios are the
seed's blocks verbatim.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from member_agent import schedule_cmd
from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.state import load_documents, state_from_documents

DATA = Path(__file__).resolve().parents[1] / "data"
SEED_SCENARIOS = DATA / "scenarios" / "seed"
Docs = list[dict[str, Any]]


def load(name: str) -> Docs:
    docs = load_documents((SEED_SCENARIOS / name).read_text(encoding="utf-8"), name)
    return [d for d in docs if d.get("kind") != "Expectation"]


def run(docs: Docs) -> CycleResult:
    state = state_from_documents(docs)
    return run_cycle(state.snapshot, state.conf, FixedClock(), options=SessionOptions(verbosity=5))


def without(docs: Docs, keep: Callable[[dict[str, Any]], bool]) -> Docs:
    return [d for d in docs if keep(d)]


def name_of(doc: dict[str, Any]) -> str:
    return str((doc.get("metadata") or {}).get("name", ""))


def first_index(logs: list[str], text: str) -> int:
    for i, line in enumerate(logs):
        if text in line:
            return i
    raise AssertionError(f"no log line contains {text!r}")


def indexes(logs: list[str], text: str) -> list[int]:
    return [i for i, line in enumerate(logs) if text in line]


def scheduler_conf_text(doc: dict[str, Any]) -> str:
    return str((doc.get("data") or {})["volcano-scheduler.conf"])


def configmap_in(name: str) -> dict[str, Any]:
    return next(d for d in load(name) if d.get("kind") == "ConfigMap")


# ---------------------------------------------------------------- fair share
def test_fair_share_serves_b_and_c_before_a() -> None:
    result = run(load("fair-share-three-queues.yaml"))
    first = first_index(result.logs, "Binding Task default/job-")
    assert "job-a" not in result.logs[first]
    assert not any(pod.startswith("default/job-a-") for pod in result.bindings)


def test_fair_share_a_gets_gpus_when_b_and_c_ask_for_none() -> None:
    docs = without(load("fair-share-three-queues.yaml"),
                   lambda d: not (d.get("kind") == "Pod" and name_of(d).startswith(("job-b-", "job-c-"))))
    result = run(docs)
    # B and C now request only what they hold, so water-filling gives A its whole request (33 GPUs)
    assert sum(pod.startswith("default/job-a-") for pod in result.bindings) == 3


# ---------------------------------------------------------------- binpack
def test_binpack_node_c_is_excluded_only_because_its_gpus_are_full() -> None:
    docs = load("binpack-nodes-abc.yaml")
    for doc in docs:
        if name_of(doc) == "used-c":
            doc["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    result = run(docs)
    # with free GPUs, C (cpu 50% used) outscores B (30%) for the pod that no longer fits on A
    assert result.bindings["default/train-worker-2"] == "node-c"


def test_binpack_scenario_uses_the_seed_configmap_verbatim() -> None:
    seed = yaml.safe_load((DATA / "seed" / "configmap-volcano-scheduler-config.yaml").read_text(encoding="utf-8"))
    assert scheduler_conf_text(configmap_in("binpack-nodes-abc.yaml")) == scheduler_conf_text(seed)


# ---------------------------------------------------------------- drf
def test_drf_job_a_fits_the_slot_when_job_b_does_not_compete() -> None:
    docs = without(load("drf-job-b-first.yaml"), lambda d: name_of(d) != "job-b-worker-1")
    assert run(docs).bindings == {"default/job-a-worker-1": "n2"}


# ---------------------------------------------------------------- backfill
def test_backfill_gang_is_tried_and_discarded_before_the_small_job_binds() -> None:
    logs = run(load("backfill-small-job-uses-idle-gpus.yaml")).logs
    tried_a = first_index(logs, "Binding Task default/job-a-worker-0")
    discarded = first_index(logs, "Discarding operations")
    bound_b = first_index(logs, "Allocate task default/job-b-worker-0 to node n1")
    assert tried_a < discarded < bound_b


def test_backfill_best_effort_pod_is_placed_by_the_backfill_action() -> None:
    logs = run(load("backfill-best-effort-while-gang-waits.yaml")).logs
    enter = first_index(logs, "Enter Backfill")
    leave = first_index(logs, "Leaving Backfill")
    placed = indexes(logs, "default/job-b-worker-0")
    assert placed and all(enter < i < leave for i in placed)


# ---------------------------------------------------------------- reservation flow
def test_reservation_flow_order() -> None:
    """Seed steps: snapshot, pending PodGroups of the queue, reserve for minMember, all allocated, bind at close."""
    logs = run(load("reservation-all-eight.yaml")).logs
    opened = first_index(logs, "Open Session")
    inqueue = first_index(logs, "PodGroup default/resv-example is inqueue")
    reserved = indexes(logs, "Binding Task default/resv-example-worker-")
    committed = first_index(logs, "Committing operations")
    allocated = indexes(logs, "Allocate task default/resv-example-worker-")
    closed = first_index(logs, "Close Session")
    assert len(reserved) == 8 and len(allocated) == 8
    assert opened < inqueue < min(reserved) and max(reserved) < committed < min(allocated) and max(allocated) < closed


def test_reservation_with_one_gpu_short_reserves_nothing() -> None:
    docs = load("reservation-all-eight.yaml")
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "namespace": "default"},
                 "spec": {"nodeName": "n1", "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
                 "status": {"phase": "Running"}})
    for doc in docs:
        if doc.get("kind") == "PodGroup":
            doc["status"]["phase"] = "Inqueue"
    result = run(docs)
    assert result.bindings == {} and result.pipelined == {}
    assert "gang: 7/8 tasks fit" in result.jobs["default/resv-example"].reason


# ---------------------------------------------------------------- the seed's other ConfigMaps
def test_seed_configmap_fragments_are_the_scenarios_configmaps() -> None:
    foreign = DATA / "seed" / "foreign"
    pairs = {
        "fragment-scheduler-conf-drf.yaml": "drf-job-b-first.yaml",
        "fragment-scheduler-conf-actions.yaml": "backfill-small-job-uses-idle-gpus.yaml",
        "fragment-scheduler-conf-binpack.yaml": "configmap-binpack-weight-10.yaml",
        "fragment-scheduler-conf-nodeorder.yaml": "configmap-nodeorder-plugin-keys.yaml",
    }
    for fragment, scenario in pairs.items():
        seed = yaml.safe_load((foreign / fragment).read_text(encoding="utf-8"))
        assert scheduler_conf_text(configmap_in(scenario)) == scheduler_conf_text(seed), scenario
    kube = yaml.safe_load((foreign / "configmap-kube-scheduler-config.yaml").read_text(encoding="utf-8"))
    assert configmap_in("configmap-kube-scheduler-config.yaml")["data"] == kube["data"]


def test_kube_scheduler_configmap_leaves_the_default_configuration() -> None:
    state = state_from_documents(load("configmap-kube-scheduler-config.yaml"))
    assert state.conf_source == "default"


# ---------------------------------------------------------------- `caldera schedule -o table` and the seed's log greps
def test_schedule_table_names_the_gang_shortfall(capsys: pytest.CaptureFixture[str]) -> None:
    path = SEED_SCENARIOS / "gang-inqueue-six-free.yaml"
    args = schedule_cmd.argparse.Namespace(filename=[str(path)], output="table", conf=None, verbosity=0)
    assert schedule_cmd.run(args) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("default/pytorch-training-pg"))
    assert row.split()[:5] == ["default/pytorch-training-pg", "ai-training", "Inqueue", "8", "0/8"]
    assert row.endswith("gang: 6/8 tasks fit; 0/1 nodes are unavailable: 1 Insufficient nvidia.com/gpu.")


def test_seed_troubleshooting_greps_find_their_lines() -> None:
    """Seed: grep "Session.*duration"; "Session Open" to "Session Close"; the PodGroup and Allocate prefixes."""
    state = state_from_documents(load("backfill-small-job-uses-idle-gpus.yaml"))
    result = run_cycle(state.snapshot, state.conf, FixedClock(), options=SessionOptions(verbosity=2))
    uid, logs = result.session_uid, result.logs
    assert [line for line in logs if re.search(r"Session.*duration", line)] == [f"Session {uid} duration: 0.000000s"]
    opened = first_index(logs, f"Session Open {uid}")
    assert opened < first_index(logs, f"Session Close {uid}") < first_index(logs, "duration")
    verbose = run(load("backfill-small-job-uses-idle-gpus.yaml")).logs
    assert any(re.fullmatch(r"PodGroup default/job-a is pending reason: gang: 6/8 tasks fit.*", line) for line in verbose)
    assert "Allocate task default/job-b-worker-0 to node n1" in verbose


@pytest.mark.parametrize(("seed_file", "scenario"), [
    ("podgroup-pytorch-training-pg.yaml", "gang-pending-six-free.yaml"),
    ("queue-ai-training.yaml", "gang-inqueue-six-free.yaml"),
    ("priorityclass-high-priority.yaml", "gang-eight-free.yaml"),
    ("queue-ai-training.yaml", "queue-capability-caps-admission.yaml"),
    ("queue-inference.yaml", "queue-capability-caps-admission.yaml"),
])
def test_seed_objects_are_used_as_written(seed_file: str, scenario: str) -> None:
    seed = yaml.safe_load((DATA / "seed" / seed_file).read_text(encoding="utf-8"))
    used = next(d for d in load(scenario) if d.get("kind") == seed["kind"] and name_of(d) == name_of(seed))
    for key in ("spec", "value", "globalDefault", "description"):
        assert used.get(key) == seed.get(key), f"{scenario}: {seed['kind']} {name_of(seed)} {key}"
