"""Kubernetes timestamps (RFC 3339: ``2026-12-02T10:00:00Z``, with a fraction or an offset), read one way
by both planes. A timestamp that names no zone reads as UTC (what the API server means), never as the
machine's local time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def instant(text: Any) -> datetime | None:
    """The instant of a timestamp field (zone-aware), or None when it is absent or unreadable."""
    if not text:
        return None
    value = str(text).strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def epoch_seconds(text: str) -> float:
    """Epoch seconds of a timestamp that must be readable (ValueError names it otherwise)."""
    moment = instant(text)
    if moment is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    return moment.timestamp()
