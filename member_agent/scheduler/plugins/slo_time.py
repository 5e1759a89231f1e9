"""Go duration strings (``1h30m``, ``90s``, ``500ms``) and RFC 3339 instants for SLO plugins."""

from __future__ import annotations

from member_agent.scheduler.framework.object_fields import parse_time
from policies.k8s import durations


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; raises ValueError naming the text when malformed."""
    try:
        return durations.parse_seconds(text.strip())
    except durations.InvalidDuration:
        raise ValueError(f"not a duration (like 30m, 1h30m, 90s): {text!r}") from None


def parse_instant(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time; ValueError when malformed."""
    try:
        return parse_time(text.strip())
    except (ValueError, TypeError):
        raise ValueError(f"not an RFC 3339 time (like 2025-06-01T00:00:00Z): {text!r}") from None
