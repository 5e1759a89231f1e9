"""``scheduling.k8s.io/v1`` PriorityClass: a named pod priority."""

from __future__ import annotations

from typing import ClassVar, Literal, Optional

from policies.models.fields import Int32, KindObject

#: Largest value a user-defined PriorityClass may have (Kubernetes' HighestUserDefinablePriority).
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
#: System classes (``system-cluster-critical``...) sit above the user range, up to this.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000


class PriorityClass(KindObject):
    API_VERSION: ClassVar[str] = "scheduling.k8s.io/v1"
    KIND: ClassVar[str] = "PriorityClass"

    value: Int32
    global_default: Optional[bool] = None
    description: Optional[str] = None
    preemption_policy: Optional[Literal["PreemptLowerPriority", "Never"]] = None
