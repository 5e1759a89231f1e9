"""``caldera simulate`` with ``hyperNodes:`` in the cluster files (simulator/topology.py): the tier each
job spans, the share of gangs in one leaf, ``--topology`` and ``--topology-slowdown``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policies.errors import InvalidConfiguration
from policies.scheduler_conf import parse_scheduler_conf
from simulator.cli import build_parser
from simulator.job_cli import load_trace, run_job_mode
from simulator.topology import parse_mode, parse_slowdown

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "simulate"
CLUSTERS = [str(ROOT / "e2e" / "data" / f"topo-{x}.yaml") for x in "ab"]
CONF = parse_scheduler_conf((ROOT / "examples" / "scheduler-conf" / "network-topology.conf").read_text())


def replay(*extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    args = build_parser().parse_args(["--trace", str(DATA / "topology.jsonl"), "--clusters", *CLUSTERS,
                                      "--policy", str(DATA / "topo-weighted.yaml"), "-o", "unused", *extra])
    run, summary = run_job_mode(args, load_trace(args), CONF, "network-topology")
    return {j.name: j for j in run.jobs}, summary


def test_without_topology_the_policy_splits_gangs_over_the_fleet_tier() -> None:
    jobs, summary = replay("--topology-slowdown", "fleet=2")
    topology = summary["topology"]
    assert topology["fleetTier"] == 3  # leaves (1) under each cluster's top (2)
    assert jobs["four"].clusters == {"topo-a": 2, "topo-b": 2}
    assert topology["tierSpanned"]["four"] == 3 and topology["tierSpanned"]["one"] == 1
    assert topology["gangsInOneTier1Domain"] == 0.0 and topology["gangs"] == 2
    assert jobs["four"].end - jobs["four"].start == 200  # split: twice as long


def test_hard_keeps_each_gang_in_one_cluster_and_the_lowest_tier_it_fits() -> None:
    jobs, summary = replay("--topology", "hard", "--topology-slowdown", "2=1.5,fleet=2")
    spans = summary["topology"]["tierSpanned"]
    assert summary["crossClusterJobs"] == 0
    assert spans == {"four": 1, "six": 2, "one": 1}
    assert summary["topology"]["gangsInOneTier1Domain"] == 0.5  # four in a leaf, six across two
    assert jobs["six"].end - jobs["six"].start == 150 and jobs["four"].end - jobs["four"].start == 100


def test_hard_tier_one_leaves_a_gang_larger_than_a_leaf_unfittable() -> None:
    jobs, _ = replay("--topology", "hard:1")
    assert jobs["six"].status == "Unfittable"
    assert "no cluster has one domain of the allowed tier" in jobs["six"].reason
    assert jobs["four"].status == "Completed"


@pytest.mark.parametrize(("text", "message"), [
    ("2", "'2': want TIER=FACTOR, TIER a tier >= 1 or 'fleet'"),
    ("0=2", "'0=2': want TIER=FACTOR"),
    ("rack=2", "'rack=2': want TIER=FACTOR"),
    ("2=fast", "'2=fast': FACTOR must be a number >= 1"),
    ("2=0.5", "'2=0.5': FACTOR must be a number >= 1"),
])
def test_a_bad_slowdown_is_refused_naming_the_entry(text: str, message: str) -> None:
    with pytest.raises(InvalidConfiguration, match="--topology-slowdown: " + message.replace("(", r"\(")):
        parse_slowdown(text)


@pytest.mark.parametrize("text", ["medium", "hard:0", "soft:1", "hard:x"])
def test_a_bad_topology_mode_is_refused(text: str) -> None:
    with pytest.raises(InvalidConfiguration, match="want none, soft, hard or hard:TIER"):
        parse_mode(text)
