"""The second phase of a gang's start: after the release it completes or aborts (pure).

Once every share of generation G reserved and the federation released them, each share must
report its gang started (``status.gang.phase: Running`` for G: at least its ``minAvailable``
pods bound and running) within the post-release deadline (``caldera.io/start-deadline-seconds``
on the Job, else ``caldera serve --gang-start-deadline``, 60 s: long enough for image pulls). A
released share on a cluster that turns Unknown counts as not started at once, whether or not the
gang had started: its agent stops it at its spanning fence, so the other shares must not run on
by halves. Either way :func:`judge` answers **cancel**: dispatch withdraws every share (the whole
gang is torn down), then the Job's ``PodEvicted`` policy decides between a restart elsewhere and
an abort. Until every share started, the Job's status says it runs by halves
(:func:`by_halves_condition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from federation.controllers.two_phase import Obj, Verdict, gang_phase

STARTED = "Running"
RELEASED_AT = "caldera.io/released-at"
STARTED_GENERATION = "caldera.io/started-generation"
START_DEADLINE = "caldera.io/start-deadline-seconds"
#: binding annotation: JSON {generation, clusters, reason} of the last gang torn down after its release
TORN_DOWN = "caldera.io/torn-down"
BY_HALVES = "RunningByHalves"


def judge(works: Mapping[str, Obj | None], generation: int, released_at: float, deadline: float,
          unknown: Set[str], started_before: bool, now: float) -> Verdict:
    """What to do with a released gang of ``generation`` (cluster -> Work); ``unknown``: clusters
    whose Ready is Unknown; ``started_before``: every share had already started once."""
    lost = tuple(sorted(c for c in works if c in unknown))
    if lost:
        return Verdict("cancel", failed=lost, message=f"cluster {', '.join(lost)} Unknown after the release: "
                                                      f"the gang is torn down rather than run by halves")
    if started_before:
        return Verdict("none", message="every share started")
    late = tuple(sorted(c for c, w in works.items() if gang_phase(w, generation) != STARTED))
    if not late:
        return Verdict("none", message="every share started")
    waiting = ", ".join(f"{c} ({gang_phase(works[c], generation) or 'no answer'})" for c in late)
    if now >= released_at + deadline:
        return Verdict("cancel", failed=late, message=f"not started within {deadline:.0f}s of the release: {waiting}")
    return Verdict("wait", released_at + deadline - now, failed=late,
                   message=f"{len(works) - len(late)}/{len(works)} shares started; waiting for {waiting}")


def by_halves_condition(verdict: Verdict, generation: int, now_stamp: str) -> dict[str, Any] | None:
    """The binding's ``GangStarted`` condition: False (reason RunningByHalves) while shares wait."""
    if verdict.action == "wait":
        return {"type": "GangStarted", "status": "False", "reason": BY_HALVES,
                "message": f"generation {generation}: {verdict.message}", "lastTransitionTime": now_stamp}
    if verdict.action == "none":
        return {"type": "GangStarted", "status": "True", "reason": "AllSharesStarted",
                "message": f"generation {generation}: every share started", "lastTransitionTime": now_stamp}
    return None
