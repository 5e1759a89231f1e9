"""RFC 3339 timestamps and Go durations, the two time formats a Job status carries.

The controller never reads the wall clock: callers pass ``now`` (an aware ``datetime``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Optional

from policies.k8s import durations
from policies.k8s.timestamps import instant


@lru_cache(maxsize=256)  # pure; a pass stamps its transitions with the one ``now``
def to_rfc3339(moment: datetime) -> str:
    """``2026-12-02T10:00:00Z`` (second precision, UTC), as metav1.Time serialises."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (pass datetime.now(timezone.utc))")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=1024)  # pure; every pass reads its Job's and pods' few timestamps again
def parse_rfc3339(text: Optional[str]) -> Optional[datetime]:
    """The instant in ``text``, or None when absent or unreadable."""
    return instant(text)


def go_duration(delta: timedelta) -> str:
    """metav1.Duration text of ``delta`` to the millisecond (``1h2m3s``, ``4.5s``, ``500ms``)."""
    return durations.format_seconds(round(delta.total_seconds(), 3))
