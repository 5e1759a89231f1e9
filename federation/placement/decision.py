"""What placement answers: per-cluster shares, or the step that failed and why, per cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional

Step = Literal["filter", "estimate", "divide", "verify"]
Verdict = Literal["candidate", "excluded", "capped", "infeasible", "selected"]
Path = Literal["karmada", "optimizer", "none"]


@dataclass(frozen=True)
class TaskShare:
    replicas: int
    min_available: int
    offset: int  # global index of this share's first replica of the task
    #: the share's global indices when they are not one range from ``offset`` (after a re-placement
    #: that kept running pods' indices): half-open ranges; empty means ``[offset, offset + replicas)``
    indices: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ClusterShare:
    name: str
    replicas: int
    min_available: int
    tasks: dict[str, TaskShare]


@dataclass
class ClusterDiagnosis:
    """Why a cluster was excluded, capped or used; filled step by step."""

    name: str
    verdict: Verdict = "candidate"
    step: Optional[Step] = None
    reason: str = ""
    weight: Optional[float] = None
    estimate: Optional[int] = None  # replicas of the job's pods that fit (exact or general)
    estimate_kind: str = ""  # "exact" (node shapes), "general" (resourceSummary) or "none"
    task_estimates: dict[str, int] = field(default_factory=dict)
    karmada: Optional[int] = None  # replicas Karmada's split gives this cluster
    infeasible: str = ""  # why Karmada's share does not fit here

    def exclude(self, step: Step, reason: str) -> None:
        self.verdict, self.step, self.reason = "excluded", step, reason


@dataclass(frozen=True)
class Failure:
    step: Step
    reason: str
    #: Karmada's condition reason: NoClusterFit, Unschedulable or SchedulerError
    condition: str = "Unschedulable"


@dataclass
class PlacementDecision:
    job: str
    strategy: str
    shares: dict[str, ClusterShare]
    reason: str
    path: Path = "karmada"
    failure: Optional[Failure] = None
    karmada_split: dict[str, int] = field(default_factory=dict)
    affinity_name: str = ""
    optimizer: dict[str, Any] = field(default_factory=dict)  # status, distance, cuts, cached
    #: cluster -> belowPriority of the preemptibleShapes the share was placed on (placement
    #: counted on the member evicting pods of lower priority there)
    preemption: dict[str, int] = field(default_factory=dict)
    #: builds the per-cluster diagnosis on first access (most callers never read it)
    explain: Optional[Callable[[], dict[str, ClusterDiagnosis]]] = field(default=None, repr=False, compare=False)
    _diagnosis: Optional[dict[str, ClusterDiagnosis]] = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def diagnosis(self) -> dict[str, ClusterDiagnosis]:
        """Per cluster: verdict, the step that excluded it and why, weight, capacity, Karmada's share."""
        if self._diagnosis is None:
            self._diagnosis = self.explain() if self.explain else {}
        return self._diagnosis

    def replicas(self) -> dict[str, int]:
        return {name: share.replicas for name, share in sorted(self.shares.items())}

    def to_stable_json(self) -> dict[str, Any]:
        """DESIGN.md's stable ``caldera place -o json`` shape."""
        return {
            "clusters": {
                name: {
                    "replicas": share.replicas,
                    "tasks": {
                        task: {"replicas": ts.replicas, "minAvailable": ts.min_available}
                        for task, ts in share.tasks.items()
                    },
                }
                for name, share in sorted(self.shares.items())
            },
            "strategy": self.strategy,
            "reason": self.reason,
        }

    def task_indices(self, cluster: str) -> dict[str, list[list[int]]]:
        """``caldera.io/task-indices`` for the Work of ``cluster`` (only tasks not in one range)."""
        return {task: [list(r) for r in ts.indices] for task, ts in self.shares[cluster].tasks.items() if ts.indices}

    def task_offsets(self, cluster: str) -> dict[str, int]:
        """``caldera.io/task-offsets`` for the Work of ``cluster``."""
        return {task: ts.offset for task, ts in self.shares[cluster].tasks.items()}
