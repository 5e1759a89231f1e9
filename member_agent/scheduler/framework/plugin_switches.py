"""Whether a plugin option's switches let it register on a point, kept per option object.

``Session.add`` honours the switch of the point a plugin registers on (``enablePreemptable``,
``enableNodeOrder``...), and every plugin of a conf registers on a few points every session:
reading each switch through ``PluginOption.enabled`` (aliases, the known-switch check, the
default) was most of registering. The answer is a function of the option's switches and the
point alone, so it is kept per option object while its switches hold the same items (an option is
frozen, but its mapping could still be changed in place: then the answers are worked out again).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from member_agent.scheduler.framework.points import Point
from policies.lru import LRU
from policies.scheduler_conf import PluginOption

#: Each point's switch, read once: ``Point.switch`` goes through two properties.
_SWITCHES: Mapping[Point, str | None] = MappingProxyType({point: point.switch for point in Point})

#: Options a process keeps answers for (a conf names a few dozen plugins at most).
_KEPT = 256
#: id(option) -> (the option, a copy of its switches, point -> whether it may register there). The
#: option is held, so its id stays its own while the entry lives.
_ANSWERS: LRU[int, tuple[PluginOption, dict[str, Any], dict[Point, bool]]] = LRU(_KEPT)


def switch_answers(option: PluginOption) -> dict[Point, bool]:
    """The answers kept for ``option``, filled by :func:`allows` as points are asked about."""
    kept = _ANSWERS.get(id(option))
    if kept is not None and kept[0] is option and kept[1] == option.switches:
        return kept[2]
    answers: dict[Point, bool] = {}
    _ANSWERS.put(id(option), (option, dict(option.switches), answers))
    return answers


def allows(option: PluginOption, answers: dict[Point, bool], point: Point) -> bool:
    """Whether ``option`` may register on ``point``: no switch guards it, or the switch is on
    (``PluginOption.enabled``, which raises for an unknown switch: such an answer is never kept)."""
    found = answers.get(point)
    if found is None:
        switch = _SWITCHES[point]
        found = answers[point] = switch is None or option.enabled(switch)
    return found
