"""``caldera place``: stable JSON shape, explained table, exit codes, bad files."""

from __future__ import annotations

import json

import pytest
from placement_builders import PLACEMENT, SEED

from federation.cli import main

POLICY = str(SEED / "propagationpolicy-volcano-job-policy.yaml")
CLUSTERS = str(PLACEMENT / "clusters-seed.yaml")
FRAGMENTED = str(PLACEMENT / "clusters-b-fragmented.yaml")
NOW = ["--now", "2026-12-02T00:00:00Z"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["place", *args, *NOW])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_designs_stable_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(SEED / "job-pytorch-dist-training.yaml"), "-f", POLICY, "-f", CLUSTERS, "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert set(body) == {"clusters", "strategy", "reason"}
    assert body["clusters"] == {
        "cluster-a": {"replicas": 1, "tasks": {"worker": {"replicas": 1, "minAvailable": 1}}},
        "cluster-b": {"replicas": 3, "tasks": {"master": {"replicas": 1, "minAvailable": 1},
                                               "worker": {"replicas": 2, "minAvailable": 2}}},
    }
    assert "Weighted" in body["strategy"]


def test_table_explains_where_karmadas_split_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(SEED / "job-gpu-dist-training.yaml"), "-f", POLICY, "-f", FRAGMENTED)
    assert code == 0
    row_b = next(line for line in out.splitlines() if line.startswith("cluster-b"))
    assert "Karmada's share does not fit: only 3 of 5 pods" in row_b
    for column in ("WEIGHT", "CAPACITY", "KARMADA", "PLACED"):
        assert column in out
    assert "Karmada's split: {cluster-a: 3, cluster-b: 5}" in out
    assert "path: optimizer" in out


def test_unschedulable_exits_one_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(PLACEMENT / "cli" / "job-too-big.yaml"), "-f", POLICY, "-f", CLUSTERS, "-o", "json")
    assert code == 1
    body = json.loads(out)
    assert body["step"] == "divide" and "unschedulable" in body["error"]
    assert "capacity is short: 24 worker pods fit" in body["error"]
    assert "unschedulable at step divide" in err


def test_previous_binding_scales_up_on_top(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(SEED / "job-gpu-training.yaml"), "-f", str(PLACEMENT / "cli" / "policy-dynamic.yaml"),
                       "-f", CLUSTERS, "--previous", str(PLACEMENT / "cli" / "binding-previous.yaml"), "-o", "json")
    assert code == 0
    # previous a:2 b:1, 4 replicas: one more, on cluster-b (availability 16 vs 8)
    assert {c: v["replicas"] for c, v in json.loads(out)["clusters"].items()} == {"cluster-a": 2, "cluster-b": 2}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([POLICY, CLUSTERS], "no batch.volcano.sh Job"),
        ([str(SEED / "job-gpu-training.yaml"), CLUSTERS], "no PropagationPolicy"),
        ([str(SEED / "job-gpu-training.yaml"), POLICY], "no Cluster objects"),
        ([str(SEED / "job-gpu-training.yaml"), str(SEED / "job-resv-example.yaml"), POLICY, CLUSTERS], "choose one with --job"),
        ([str(SEED / "job-gpu-training.yaml"), str(PLACEMENT / "cli" / "policy-zero-weight.yaml"), CLUSTERS], "staticWeightList[0].weight"),
        ([str(PLACEMENT / "does-not-exist.yaml")], "does-not-exist.yaml"),
    ],
)
def test_bad_files_exit_two_naming_the_problem(capsys: pytest.CaptureFixture[str], files: list[str], message: str) -> None:
    args = [a for f in files for a in ("-f", f)]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert message in err
