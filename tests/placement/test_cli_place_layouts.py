"""``caldera place`` on the agents' cluster layout files (examples/clusters, examples/placement):
the Clusters are derived as the agent reports them; bad layouts are refused naming file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from federation.cli import main
from policies.codec import decode_object

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed"
CLUSTERS = ROOT / "examples" / "clusters"
JOB = str(SEED / "job-gpu-dist-training.yaml")
POLICY = str(SEED / "propagationpolicy-volcano-job-policy.yaml")
FRAGMENTED = str(ROOT / "examples" / "placement" / "cluster-b-fragmented.yaml")


def place(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["place", *args])
    out, err = capsys.readouterr()
    return code, out, err


def split(out: str) -> dict[str, int]:
    return {name: share["replicas"] for name, share in json.loads(out)["clusters"].items()}


@pytest.mark.parametrize("clusters", [
    [str(CLUSTERS / "cluster-a.yaml"), str(CLUSTERS / "cluster-b.yaml")],
    [str(CLUSTERS)],  # a directory of layout files
], ids=["files", "directory"])
def test_the_shipped_layouts_give_karmadas_weighted_split(capsys: pytest.CaptureFixture[str], clusters: list[str]) -> None:
    args = [arg for path in clusters for arg in ("-f", path)]
    code, out, err = place(capsys, "-f", JOB, "-f", POLICY, *args, "-o", "json")
    assert code == 0, err
    assert split(out) == {"cluster-a": 3, "cluster-b": 5}  # 1:2 by Webster: b, a, b, b, a, b, b, a


def test_the_placement_example_needs_the_optimizer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = place(capsys, "-f", JOB, "-f", POLICY, "-f", str(CLUSTERS / "cluster-a.yaml"), "-f", FRAGMENTED)
    assert code == 0, err
    row_b = next(line for line in out.splitlines() if line.startswith("cluster-b"))
    assert "3 (exact)" in row_b and "only 3 of 5 pods" in row_b
    assert "Karmada's split: {cluster-a: 3, cluster-b: 5}" in out
    assert "path: optimizer" in out
    code, out, _ = place(capsys, "-f", JOB, "-f", POLICY, "-f", str(CLUSTERS / "cluster-a.yaml"), "-f", FRAGMENTED,
                         "-o", "json")
    assert split(out) == {"cluster-a": 5, "cluster-b": 3}


def test_layouts_mix_with_cluster_manifests(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the derived Cluster is a valid Cluster object: written out, it places the same as the layout
    from federation.cli.place_layouts import split_layouts

    _, clusters = split_layouts([str(CLUSTERS / "cluster-b.yaml")])
    decode_object(clusters[0])  # admission-grade validation of the derived object
    manifest = tmp_path / "cluster-b.json"
    manifest.write_text(json.dumps(clusters[0]))
    code, out, err = place(capsys, "-f", JOB, "-f", POLICY, "-f", str(CLUSTERS / "cluster-a.yaml"), "-f", str(manifest),
                           "-o", "json")
    assert code == 0, err
    assert split(out) == {"cluster-a": 3, "cluster-b": 5}


BAD_LAYOUTS = [
    ("name: c\npools:\n- {name: p, count: 2, memory: 8Gi}\n", "pools[0].cpu: required"),
    ("name: c\npools:\n- {name: p, count: 2, cpu: 8, memory: 8Gi, gpus: {product: X, count: 0, memoryGiB: 8}}\n",
     "pools[0].gpus.count: must be an integer >= 1"),
    ("name: c\npools:\n- {name: p, cpu: 8, memory: lots}\n", "pools[0].memory"),
    ("name: c\npools:\n- {name: p, cpu: 8, memory: 8Gi, colour: red}\n", "unknown field(s) colour"),
    ("name: c\npools: []\n", "the cluster has no nodes"),
]


@pytest.mark.parametrize(("text", "message"), BAD_LAYOUTS, ids=[m for _, m in BAD_LAYOUTS])
def test_a_bad_layout_is_refused_naming_file_and_field(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       text: str, message: str) -> None:
    bad = tmp_path / "bad-cluster.yaml"
    bad.write_text(text)
    code, out, err = place(capsys, "-f", JOB, "-f", POLICY, "-f", str(CLUSTERS / "cluster-a.yaml"), "-f", str(bad))
    assert code == 2 and out == ""
    assert str(bad) in err and message in err


def test_a_cluster_given_twice_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "again.yaml"
    copy.write_text((CLUSTERS / "cluster-a.yaml").read_text())
    code, out, err = place(capsys, "-f", JOB, "-f", POLICY, "-f", str(CLUSTERS), "-f", str(copy))
    assert code == 2 and out == ""
    assert "Cluster cluster-a given more than once" in err


def test_no_clusters_names_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = place(capsys, "-f", JOB, "-f", POLICY)
    assert code == 2
    assert "no Cluster objects or cluster layout files" in err
