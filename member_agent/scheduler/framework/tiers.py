"""How the callbacks of plugins in tiers combine (``reference/volcano.md`` §3).

Each extension point holds ``tiers``: a list (one entry per configured tier) of lists of
``(plugin name, callback)`` in configured order, already filtered by the plugins' enable
switches. Every rule Volcano uses is one function here, so actions never re-implement
vote logic:

* :func:`first_nonzero` — order functions: the first non-zero comparison decides;
* :func:`all_true` — Predicate/Allocatable/JobReady/Preemptive: AND, nothing registered ⇒ true;
* :func:`any_true` — Overused: OR;
* :func:`tier_vote` — JobPipelined/JobEnqueueable: a Reject ends with false, a tier with a
  Permit ends with true, an abstaining tier defers to the next, nothing decided ⇒ true;
* :func:`starving` — JobStarving: a false anywhere ⇒ false; any registered ⇒ true; none ⇒ false;
* :func:`tiered_victims` — Preemptable/Reclaimable: per-tier intersection with Volcano's quirks.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from member_agent.scheduler.framework.status import Vote

T = TypeVar("T")
Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]


def first_nonzero(tiers: Tiers, *args: Any) -> int:
    for tier in tiers:
        for _name, fn in tier:
            result = fn(*args)
            if result != 0:
                return int(result)
    return 0


def all_true(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        for _name, fn in tier:
            if not fn(*args):
                return False
    return True


def any_true(tiers: Tiers, *args: Any) -> bool:
    return any(fn(*args) for tier in tiers for _name, fn in tier)


def tier_vote(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        permitted = False
        for _name, fn in tier:
            vote = fn(*args)
            if vote < 0:
                return False
            if vote > 0:
                permitted = True
        if permitted:
            return True
    return True


def tier_vote_reasons(tiers: Tiers, *args: Any) -> tuple[bool, str]:
    """:func:`tier_vote`, also naming the plugin that rejected."""
    for tier in tiers:
        permitted = False
        for name, fn in tier:
            vote = fn(*args)
            if vote < 0:
                return False, name
            if vote > 0:
                permitted = True
        if permitted:
            return True, ""
    return True, ""


def starving(tiers: Tiers, *args: Any) -> bool:
    registered = False
    for tier in tiers:
        for _name, fn in tier:
            registered = True
            if not fn(*args):
                return False
    return registered


def tiered_victims(tiers: Tiers, key: Callable[[T], str], *args: Any) -> list[T] | None:
    """Volcano's victim selection: ``fn(*args) -> (victims, vote)`` per plugin.

    An abstaining plugin is skipped; an empty answer resets the tier's result and ends the
    tier (the next tier is consulted); otherwise results intersect (by ``key``, in the
    order of the running result), and an empty intersection reads as "nothing yet", so
    the next plugin of the tier starts afresh.
    """
    victims: list[T] | None = None
    for tier in tiers:
        for _name, fn in tier:
            candidates, vote = fn(*args)
            if vote == Vote.ABSTAIN:
                continue
            if not candidates:
                victims = None
                break
            if victims is None:
                victims = list(candidates)
            else:
                keep = {key(c) for c in candidates}
                victims = [v for v in victims if key(v) in keep] or None
        if victims is not None:
            return victims
    return victims
