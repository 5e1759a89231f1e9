"""Does a ``priorityClassName`` name a PriorityClass? (Kubernetes' Priority admission, online only.)

On a member cluster, Kubernetes refuses every pod whose ``priorityClassName`` names no
PriorityClass ("no PriorityClass with name X was found"), so a Job or PodGroup naming one would
be placed and then never start. The federation refuses it at the door instead. The two system
classes exist in every cluster and are always accepted. Offline (``caldera validate``) the
check is skipped, like the queue checks.
"""

from __future__ import annotations

from typing import Optional

from policies.admission import AdmissionContext
from policies.errors import FieldError

#: Built into every Kubernetes cluster (not stored objects here).
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def check_priority_class(ctx: AdmissionContext, name: Optional[str], path: str) -> list[FieldError]:
    """A FieldError at ``path`` when ``name`` is set and names no stored PriorityClass."""
    if not name or name in BUILTIN_PRIORITY_CLASSES or not ctx.online or ctx.get is None:
        return []
    if ctx.get("PriorityClass", None, name) is None:
        return [FieldError(path, f"Invalid value: {name!r}: no PriorityClass with name {name} was found")]
    return []
