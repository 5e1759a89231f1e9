"""A short fixed-seed version of the openb packing check (the full one: bench/simulate.py fgd).

Every 8th node of the openb node list (≈ 150 nodes, the list's mix of 2-, 4- and 8-GPU nodes
and CPU sizes) and pods sampled from the full pod list to 130 % of that slice's GPUs, replayed
by the FGD protocol under gpu-packing.conf and binpack.conf: the packing must end with more
GPUs allocated and must not reject an 8-GPU pod before 85 % allocation. (On node subsets
Volcano's default conf can end higher than the packing; the full 1,213-node comparison is
bench/simulate.py's, see docs/gpu-packing.md.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from member_agent.scheduler.framework.session import SessionOptions
from policies.scheduler_conf import parse_scheduler_conf
from simulator.fgd_mode import FgdRun, run_fgd
from simulator.openb import read_nodes, read_pods

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"
PODS = TRACES / "openb_pod_list_default.csv"
NODES = TRACES / "openb_node_list_gpu_node.csv"
CONFS = ROOT / "examples" / "scheduler-conf"

def replay(conf_name: str) -> FgdRun:
    nodes = read_nodes(str(NODES))[::8]
    pods, _ = read_pods(str(PODS))
    conf = parse_scheduler_conf((CONFS / conf_name).read_text())
    return run_fgd(nodes, pods, conf, seed=42, batch=50, options=SessionOptions(percentage_nodes_to_find=100))


@pytest.fixture(scope="module")
def packing() -> FgdRun:
    return replay("gpu-packing.conf")


def test_gpu_packing_allocates_more_than_binpack(packing: FgdRun) -> None:
    default = replay("binpack.conf")
    assert packing.series[-1][1] > default.series[-1][1]
    assert packing.over_capacity_gpus == 0


def test_gpu_packing_keeps_8_gpu_pods_placeable_to_85_percent(packing: FgdRun) -> None:
    eight = packing.first_rejection_by_gpus.get("8")
    assert eight is None or eight >= 0.85
