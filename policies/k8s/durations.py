"""Go's ``time.Duration`` text (``metav1.Duration``, kube's duration flags): parse and format, once.

Parsing follows ``time.ParseDuration``: an optional sign, then one or more
``<number><unit>`` parts, a number being digits with an optional fraction (``1.5``, ``.5``,
``1.``, not ``.``), a unit one of ``ns``, ``us``, ``µs`` (U+00B5), ``μs`` (U+03BC), ``ms``, ``s``,
``m``, ``h``. ``"0"`` alone needs no unit; any other number without one is an error, as are
unknown units, spaces and values beyond Go's int64 nanoseconds (about 292 years). Days are not
a Go unit. Arithmetic is on integer nanoseconds (a fraction is truncated to the nanosecond), so
``1h30m`` and ``5400s`` are the same value exactly.

Formatting follows ``Duration.String``: ``0s``; under a second in the largest fitting small
unit (``500ms``, ``1.5µs``, ``7ns``); otherwise ``[h]h[m]m<s>s`` with the seconds' fraction
trimmed (``1h0m0.5s``, ``1m30s``, ``45s``).
"""

from __future__ import annotations

import argparse
import re

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
UNITS = {"ns": NANOSECOND, "us": MICROSECOND, "µs": MICROSECOND, "μs": MICROSECOND, "ms": MILLISECOND,
         "s": SECOND, "m": MINUTE, "h": HOUR}
_MAX = (1 << 63) - 1  # Go's int64 nanoseconds; -(1 << 63) is allowed too
_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]*)")
_BARE_SECONDS = re.compile(r"^\d+(\.\d+)?$")
HINT = "a Go duration such as '30s', '1h30m', '500ms'"


class InvalidDuration(ValueError):
    """Text that is not a Go duration; the message quotes it and says why."""

    def __init__(self, text: object, reason: str) -> None:
        self.text = text
        super().__init__(f"{text!r} is not a duration ({reason}; {HINT})")


def parse_nanoseconds(text: str) -> int:
    """Integer nanoseconds in Go duration ``text``; InvalidDuration when it is not one."""
    if not isinstance(text, str):
        raise InvalidDuration(text, "not text")
    body = text
    negative = body[:1] == "-"
    if body[:1] in ("-", "+"):
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise InvalidDuration(text, "empty")
    total, pos = 0, 0
    while pos < len(body):
        match = _PART.match(body, pos)
        assert match is not None  # every group may be empty
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise InvalidDuration(text, "a number must come before each unit")
        if not unit:
            raise InvalidDuration(text, "missing unit; use one of ns, us, µs, ms, s, m, h")
        scale = UNITS.get(unit)
        if scale is None:
            raise InvalidDuration(text, f"unknown unit {unit!r}; use one of ns, us, µs, ms, s, m, h")
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX + negative:
            raise InvalidDuration(text, "out of range (Go durations end at about 292 years)")
        pos = match.end()
    return -total if negative else total


def parse_seconds(text: str) -> float:
    """Seconds in Go duration ``text`` (InvalidDuration when it is not one)."""
    return parse_nanoseconds(text) / SECOND


def parse_flag_seconds(text: str) -> float:
    """A duration flag's value: a Go duration, or (Caldera's leniency) a bare number of seconds."""
    stripped = text.strip()
    if _BARE_SECONDS.match(stripped):
        return float(stripped)
    return parse_seconds(stripped)


def duration_flag(text: str) -> float:
    """argparse ``type=`` for kube-style duration flags (``--leader-elect-lease-duration 15s``):
    :func:`parse_flag_seconds`, with the reason shown as argparse's error."""
    try:
        return parse_flag_seconds(text)
    except InvalidDuration as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fraction(value: int, digits: int) -> str:
    """``value`` over ``10 ** digits`` as Go prints it: ``1.5``, ``2``."""
    whole, rest = divmod(value, 10 ** digits)
    text = f"{rest:0{digits}d}".rstrip("0")
    return f"{whole}.{text}" if text else str(whole)


def format_nanoseconds(ns: int) -> str:
    """Go's ``Duration.String`` of ``ns`` nanoseconds."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < MICROSECOND:
        return f"{sign}{ns}ns"
    if ns < MILLISECOND:
        return f"{sign}{_fraction(ns, 3)}µs"
    if ns < SECOND:
        return f"{sign}{_fraction(ns, 6)}ms"
    hours, rest = divmod(ns, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    text = f"{hours}h{minutes}m" if hours else f"{minutes}m" if minutes else ""
    return f"{sign}{text}{_fraction(rest, 9)}s"


def format_seconds(seconds: float) -> str:
    """Go's ``Duration.String`` of ``seconds`` (rounded to the nanosecond)."""
    return format_nanoseconds(round(seconds * SECOND))
