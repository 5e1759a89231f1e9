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
    pipelined: dict[str, list[str]] = field(default_factory=dict)  # "ns/podgroup" -> nodes
    pod_groups: dict[str, str] = field(default_factory=dict)  # "ns/podgroup" -> phase
    conditions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    jobs: dict[str, JobReport] = field(default_factory=dict)
    pod_owner: dict[str, str] = field(default_factory=dict)  # "ns/pod" -> "ns/podgroup"
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    session_uid: str = ""
    session_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The stable shape of ``caldera schedule -o json`` (DESIGN.md "Stable file formats")."""
        return {
            "bindings": dict(sorted(self.bindings.items())),
            "evictions": sorted(self.evictions),
            "pipelined": {k: v for k, v in sorted(self.pipelined.items())},
            "podGroups": dict(sorted(self.pod_groups.items())),
            "sessionSeconds": round(self.session_seconds, 6),
        }
