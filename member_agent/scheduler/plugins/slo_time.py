"""Go duration strings (``1h30m``, ``90s``, ``500ms``) and RFC 3339 instants for SLO plugins."""

from __future__ import annotations

import re

from member_agent.scheduler.framework.builder import parse_time

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; raises ValueError naming the text when malformed."""
    value = text.strip()
    if value in ("0", ""):
        if value == "":
            raise ValueError("empty duration")
        return 0.0
    sign = -1.0 if value.startswith("-") else 1.0
    body = value.lstrip("+-")
    pos, total = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or pos == 0:
        raise ValueError(f"not a duration (like 30m, 1h30m, 90s): {text!r}")
    return sign * total


def parse_instant(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time; ValueError when malformed."""
    try:
        return parse_time(text.strip())
    except (ValueError, TypeError):
        raise ValueError(f"not an RFC 3339 time (like 2025-06-01T00:00:00Z): {text!r}") from None
