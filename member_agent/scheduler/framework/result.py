"""What one session decided: the :class:`CycleResult` returned by ``run_cycle``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobReport:
    """One PodGroup after the session: counts and the reason it is not (fully) running."""

    job: str
    queue: str
    phase: str
    min_available: int
    tasks: int
    bound: int  # bound this session plus already bound/running/finished
    pipelined: int
    pending: int
    reason: str = ""  # short: "gang: 6/8 tasks fit", "queue q overused", node summary
    message: str = ""  # Volcano's PodGroup condition message


@dataclass
class CycleResult:
    bindings: dict[str, str] = field(default_factory=dict)  # "ns/pod" -> node
    evictions: list[str] = field(default_factory=list)  # "ns/pod"
    #: "ns/pod" -> why it was evicted ("preempt: priority 10 < 1000, for ns/job").
    eviction_reasons: dict[str, str] = field(default_factory=dict)
    #: "ns/pod" -> {"gpus": [device ids], "numa": [NUMA ids]} for pods bound this session.
    device_allocations: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: "ns/pod" -> annotations to patch onto the pod before binding (volcano.sh/gpu-index, ...).
    pod_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    #: "ns/pod" -> node: pipelined preemptors/reclaimers whose victims are being evicted there;
    #: the agent sets the pod's ``status.nominatedNodeName`` so the next session tries it first.
    nominations: dict[str, str] = field(default_factory=dict)
    #: "ns/podgroup" -> annotations for the PodGroup (``volcano.sh/job-allocated-hypernode``).
    pod_group_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    #: pending pods whose ``status.nominatedNodeName`` no longer holds (the node is gone, or the
    #: pod fits there no more even once releasing pods leave): the agent clears it, as
    #: kube-scheduler clears a nomination that is no longer valid.
    nominations_cleared: list[str] = field(default_factory=list)
    pipelined: dict[str, list[str]] = field(default_factory=dict)  # "ns/podgroup" -> nodes
    pod_groups: dict[str, str] = field(default_factory=dict)  # "ns/podgroup" -> phase
    #: "ns/podgroup" -> its conditions as the session leaves them. Read-only: the PodGroups the
    #: session left out whose only condition is gang's Scheduled share one list of it.
    conditions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    jobs: dict[str, JobReport] = field(default_factory=dict)
    pod_owner: dict[str, str] = field(default_factory=dict)  # "ns/pod" -> "ns/podgroup"
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    session_uid: str = ""
    session_seconds: float = 0.0
    #: Where the next session's node search starts (``SessionOptions.last_processed_node_index``).
    last_processed_node_index: int = 0
    #: PodGroups whose status above differs from their snapshot's only in the transitionID of
    #: gang's Scheduled condition (quiescent jobs, framework/quiescent.py). Volcano's job updater
    #: does not write such a status (it compares conditions without transition id and times), so
    #: a consumer may skip them. Not part of the result's equality or JSON.
    steady_pod_groups: set[str] = field(default_factory=set, compare=False)
    #: ``pod_groups``' keys outside ``steady_pod_groups``, in its order, as closing found them without a
    #: pass over every PodGroup (None: not known). Read through :meth:`moved_pod_groups`, which checks
    #: it still describes ``pod_groups``. Not part of the result's equality or JSON.
    moved: list[str] | None = field(default=None, compare=False, repr=False)
    #: how many PodGroups ``pod_groups`` held when ``moved`` was set
    moved_of: int = field(default=-1, compare=False, repr=False)

    def moved_pod_groups(self) -> list[str]:
        """The keys of ``pod_groups`` but the steady ones, in its order: the PodGroups whose status a
        consumer writes. A replay session leaves out most of its jobs, nearly all of them steady;
        walking every PodGroup to skip them was the consumer's largest cost per session."""
        if self.moved is not None and self.moved_of == len(self.pod_groups):
            return self.moved
        steady = self.steady_pod_groups
        return [key for key in self.pod_groups if key not in steady]

    def to_json(self) -> dict[str, Any]:
        """The stable shape of ``caldera schedule -o json`` (DESIGN.md "Stable file formats")."""
        out: dict[str, Any] = {
            "bindings": dict(sorted(self.bindings.items())),
            "evictions": sorted(self.evictions),
            "pipelined": {k: v for k, v in sorted(self.pipelined.items())},
            "podGroups": dict(sorted(self.pod_groups.items())),
            "sessionSeconds": round(self.session_seconds, 6),
        }
        # Additive keys, present only when something happened (older readers ignore them).
        if self.eviction_reasons:
            out["evictionReasons"] = dict(sorted(self.eviction_reasons.items()))
        if self.device_allocations:
            out["deviceAllocations"] = dict(sorted(self.device_allocations.items()))
        if self.pod_annotations:
            out["podAnnotations"] = dict(sorted(self.pod_annotations.items()))
        if self.nominations:
            out["nominations"] = dict(sorted(self.nominations.items()))
        if self.pod_group_annotations:
            out["podGroupAnnotations"] = dict(sorted(self.pod_group_annotations.items()))
        if self.nominations_cleared:
            out["nominationsCleared"] = sorted(self.nominations_cleared)
        return out
