"""The objects ``caldera demo`` applies, taken from the seed examples, and what each must reach.

The seed files are used as written, with three documented additions so the demo finishes on
its own in a few minutes:

* every Job gets a short simulated run time: annotation ``caldera.io/sim-duration`` on the Job
  and on each task's pod template (the sim kubelet reads it from the pod; ``--speed`` divides it);
* ``shared-gpu-inference`` names queue ``inference-queue``, which no seed manifest defines; the
  demo runs it in the seed's ``inference`` queue;
* the ``ml-pipeline`` JobFlow names four JobTemplates the seed never defines; the demo ships
  them (``data/ml-pipeline-templates.yaml``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from federation.demo.processes import ClusterSpec

SIM_DURATION = "caldera.io/sim-duration"
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = Path(__file__).resolve().parent / "data"
NAMESPACE = "default"

#: seed file -> simulated run time in seconds (before --speed), for the workloads
SEED_WORKLOADS: dict[str, int] = {
    "job-gpu-dist-training.yaml": 60,
    "job-pytorch-dist-training.yaml": 50,
    "job-pytorch-ddp.yaml": 40,
    "job-resv-example.yaml": 40,
    "job-shared-gpu-inference.yaml": 40,
}
SEED_SETUP = [
    "queue-ai-training.yaml",
    "queue-inference.yaml",
    "priorityclass-high-priority.yaml",
    "propagationpolicy-volcano-job-policy.yaml",
]
FLOW_FILE = "jobflow-ml-pipeline.yaml"
FLOW_STEP_SECONDS = 20
QUEUE_RENAMES = {"inference-queue": "inference"}

#: final phase per kind: Volcano Job ``status.state.phase``, JobFlow ``status.state.phase``
FINAL_PHASE = {"Job": "Completed", "JobFlow": "Succeed"}
#: phases after which nothing more happens; reaching one that is not expected fails the demo
TERMINAL_PHASES = {"Completed", "Failed", "Aborted", "Terminated", "Succeed"}


@dataclass
class DemoPlan:
    """What the demo applies (in order) and the final phase it waits for, per (kind, name)."""

    manifests: list[dict[str, Any]]
    expected: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def default_clusters(examples: Path = EXAMPLES) -> list[ClusterSpec]:
    return [ClusterSpec("cluster-a", examples / "clusters" / "cluster-a.yaml"),
            ClusterSpec("cluster-b", examples / "clusters" / "cluster-b.yaml")]


def clusters_from_file(path: Path) -> list[ClusterSpec]:
    """A ``--clusters`` file: a YAML list of ``{name, file}`` (files relative to it), or one cluster file.

    A single sim cluster file (with ``name:``) runs one agent; a list runs one agent per entry.
    """
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"--clusters {path}: {exc}") from None
    if isinstance(data, dict) and "name" in data:
        return [ClusterSpec(str(data["name"]), path)]
    entries = data.get("clusters") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"--clusters {path}: expected a cluster file (with name:) or a list of {{name, file}}")
    specs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("name") or not entry.get("file"):
            raise ValueError(f"--clusters {path}: clusters[{i}] needs name and file")
        file = (path.parent / str(entry["file"])).resolve()
        if not file.exists():
            raise ValueError(f"--clusters {path}: clusters[{i}].file {file} does not exist")
        specs.append(ClusterSpec(str(entry["name"]), file))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"--clusters {path}: cluster names must be unique, got {names}")
    return specs


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def with_sim_duration(job: dict[str, Any], seconds: int) -> dict[str, Any]:
    """A copy of a Job (or JobTemplate) whose pods run ``seconds`` of simulated time."""
    job = copy.deepcopy(job)
    value = f"{seconds}s"
    job.setdefault("metadata", {}).setdefault("annotations", {})[SIM_DURATION] = value
    for task in (job.get("spec") or {}).get("tasks") or []:
        template = task.setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("annotations", {})[SIM_DURATION] = value
    return job


def demo_plan(examples: Path = EXAMPLES, cluster_names: list[str] | None = None) -> DemoPlan:
    """The seed's setup objects, workloads and pipeline, ready to apply in this order."""
    seed = examples / "seed"
    if not seed.is_dir():
        raise FileNotFoundError(f"seed examples not found in {seed} (run from a source checkout)")
    plan = DemoPlan(manifests=[])
    for name in SEED_SETUP:
        for doc in _load(seed / name):
            if doc.get("kind") == "PropagationPolicy" and cluster_names is not None:
                doc = _restrict_policy(doc, cluster_names, plan.notes)
            plan.manifests.append(doc)
    for name, seconds in SEED_WORKLOADS.items():
        for doc in _load(seed / name):
            spec = doc.get("spec") or {}
            renamed = QUEUE_RENAMES.get(spec.get("queue", ""))
            if renamed:
                plan.notes.append(f"{doc['metadata']['name']}: queue {spec['queue']!r} (not defined by the seed) "
                                  f"-> {renamed!r}")
                doc = {**doc, "spec": {**spec, "queue": renamed}}
            plan.manifests.append(with_sim_duration(doc, seconds))
            plan.expected[(doc["kind"], doc["metadata"]["name"])] = FINAL_PHASE["Job"]
    for doc in _load(DATA / "ml-pipeline-templates.yaml"):
        plan.manifests.append(with_sim_duration(doc, FLOW_STEP_SECONDS))
    for doc in _load(seed / FLOW_FILE):
        plan.manifests.append(doc)
        plan.expected[(doc["kind"], doc["metadata"]["name"])] = FINAL_PHASE["JobFlow"]
    return plan


def _restrict_policy(policy: dict[str, Any], names: list[str], notes: list[str]) -> dict[str, Any]:
    """With ``--clusters`` naming other clusters: keep the seed's weights for the clusters that exist,
    weight 1 for the others, so the policy still selects every member cluster."""
    policy = copy.deepcopy(policy)
    placement = policy["spec"]["placement"]
    seed_names = placement.get("clusterAffinity", {}).get("clusterNames") or []
    if sorted(seed_names) == sorted(names):
        return policy
    placement["clusterAffinity"] = {"clusterNames": list(names)}
    weights = {}
    for entry in placement["replicaScheduling"]["weightPreference"]["staticWeightList"]:
        for cluster in entry["targetCluster"].get("clusterNames") or []:
            weights[cluster] = entry["weight"]
    placement["replicaScheduling"]["weightPreference"]["staticWeightList"] = [
        {"targetCluster": {"clusterNames": [n]}, "weight": weights.get(n, 1)} for n in names]
    notes.append(f"volcano-job-policy: clusters {seed_names} -> {names} (weights {[weights.get(n, 1) for n in names]})")
    return policy


def dump(plan: DemoPlan) -> str:
    """The applied manifests as one multi-document YAML (written next to the data for --keep users)."""
    return yaml.safe_dump_all(plan.manifests, sort_keys=False, allow_unicode=True)
