"""Two-phase start of a gang spanning clusters, federation side (DESIGN.md "Gang across clusters").

Dispatch writes every share of generation G with ``hold: true``. :func:`judge` looks at the
shares' ``status.gang`` and answers:

* **release** when every share reports ``Reserved`` (or already ``Released``/``Running``)
  for G: dispatch sets ``hold: false`` on each;
* **cancel** when a share reports ``Failed``/``Cancelled`` for G, or when some share is not
  Reserved (``Pending``, ``Unschedulable``, no answer) ``timeout`` seconds after G was placed:
  dispatch sets
  ``cancelled: true`` on every share and records the failed clusters so placement lowers
  their estimate (:func:`merge_caps`; a cluster failing twice in a row is excluded for this
  job), then placement writes G+1 after a backoff;
* **wait** (with how long until the timeout) otherwise.

A status for another generation is ignored (fencing: a late answer about G-1 never releases
or cancels G). Pure: no I/O, time passed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Obj = Mapping[str, Any]
Action = Literal["wait", "release", "cancel", "none"]
READY_PHASES = ("Reserved", "Released", "Running")
#: answers that end the attempt at once; ``Unschedulable`` is not one of them: the agent reports it
#: while the gang does not fit *yet* (it may once other work finishes), so it waits for the timeout
FAILED_PHASES = ("Failed", "Cancelled")


@dataclass(frozen=True)
class Verdict:
    action: Action
    wait_seconds: float = 0.0
    #: clusters whose share did not reserve (for the estimate cap)
    failed: tuple[str, ...] = ()
    message: str = ""


def gang_phase(work: Obj | None, generation: int) -> str:
    """The share's phase for ``generation`` ("" when the agent has not answered for it)."""
    if work is None:
        return ""
    gang = (work.get("status") or {}).get("gang") or {}
    try:
        answered = int(gang.get("generation"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return str(gang.get("phase") or "") if answered == generation else ""


def judge(works: Mapping[str, Obj | None], generation: int, placed_at: float, timeout: float, now: float) -> Verdict:
    """What to do with a held gang of ``generation`` whose shares are ``works`` (cluster -> Work)."""
    if any(w is None or int(((w.get("spec") or {}).get("placement") or {}).get("generation", -1)) != generation
           for w in works.values()):
        return Verdict("wait", max(0.0, placed_at + timeout - now), message="shares not dispatched yet")
    phases = {cluster: gang_phase(w, generation) for cluster, w in works.items()}
    failed = tuple(sorted(c for c, p in phases.items() if p in FAILED_PHASES))
    pending = tuple(sorted(c for c, p in phases.items() if p not in READY_PHASES and p not in FAILED_PHASES))
    if failed:
        reasons = "; ".join(f"{c}: {phases[c]} ({_reason(works[c])})" for c in failed)
        return Verdict("cancel", failed=failed, message=f"share could not reserve: {reasons}")
    if not pending:
        held = any(((w or {}).get("spec") or {}).get("placement", {}).get("hold") for w in works.values())
        return Verdict("release" if held else "none", message="every share reserved")
    deadline = placed_at + timeout
    if now >= deadline:
        waiting = ", ".join(f"{c} ({phases[c] or 'no answer'})" for c in pending)
        return Verdict("cancel", failed=pending,
                       message=f"not reserved within {timeout:.0f}s: {waiting}")
    return Verdict("wait", deadline - now, message=f"waiting for {', '.join(pending)}")


def _reason(work: Obj | None) -> str:
    gang = ((work or {}).get("status") or {}).get("gang") or {}
    return str(gang.get("reason") or "no reason given")


def merge_caps(caps: Mapping[str, Any] | None, shares: Mapping[str, Mapping[str, Any]], failed: tuple[str, ...],
               until: float, now: float = float("-inf"), exclude_after: int = 0) -> dict[str, Any]:
    """The caps after an attempt whose ``failed`` clusters did not reserve their share (``shares``).

    Each failed cluster's share (per task) is added to the pods its estimate is lowered by, its
    ``failures`` (consecutive failed reservations) goes up by one and its ``until`` moves to
    ``until``; a cluster of the attempt that did reserve starts counting again from zero.
    A cluster failing ``exclude_after`` times in a row (0: never) is marked ``excluded``: it is
    left out of this job's placements until ``until``, whatever its estimate (its agent may never
    reserve: queue closed, over capability). Entries whose ``until`` passed before ``now`` are
    dropped first, so an old failure does not count against a later attempt.
    """
    out: dict[str, Any] = {k: dict(v) for k, v in (caps or {}).items()
                           if isinstance(v, Mapping) and _float(v.get("until")) >= now}
    for cluster in shares:
        if cluster not in failed and cluster in out and not out[cluster].get("excluded"):
            out[cluster]["failures"] = 0
    for cluster in failed:
        share = shares.get(cluster) or {}
        entry = out.get(cluster) or {"tasks": {}}
        tasks = dict(entry.get("tasks") or {})
        for task, value in (share.get("tasks") or {}).items():
            tasks[task] = int(tasks.get(task, 0)) + int(value.get("replicas") or 0)
        failures = int(entry.get("failures") or 0) + 1
        updated: dict[str, Any] = {"tasks": tasks, "until": until, "failures": failures}
        if entry.get("excluded") or (exclude_after > 0 and failures >= exclude_after):
            updated["excluded"] = True
        out[cluster] = updated
    return out


def newly_excluded(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> tuple[str, ...]:
    """Clusters ``after`` excludes that ``before`` did not (for the Event)."""
    was = {k for k, v in (before or {}).items() if isinstance(v, Mapping) and v.get("excluded")}
    return tuple(sorted(k for k, v in after.items() if v.get("excluded") and k not in was))


def exclusion_note(cluster: str, cap: Mapping[str, Any], now: float) -> str:
    """``cluster-b failed to reserve 2 times: excluded for 15m``."""
    minutes = max(1, math.ceil((_float(cap.get("until")) - now) / 60))
    return f"{cluster} failed to reserve {int(cap.get('failures') or 0)} times: excluded for {minutes}m"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
