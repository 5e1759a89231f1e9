"""The one exception tree of Caldera.

Every error a user can cause or a process can hit derives from :class:`CalderaError`.
The split that matters to callers is *permanent* versus *temporary*:

    CalderaError
    ├── PermanentError          retrying cannot help; report it and move on
    │   ├── InvalidQuantity     a Kubernetes quantity that does not parse
    │   ├── ValidationFailed    an object broke one or more rules (each a FieldError)
    │   ├── DecodeError         a manifest that is not YAML/JSON or not an object
    │   ├── UnknownKind         apiVersion/kind that Caldera does not serve
    │   │   └── NotACalderaKind a well-formed manifest of someone else's kind
    │   └── InvalidConfiguration a scheduler configuration that cannot be used
    └── TemporaryError          the same call may succeed later (conflicts, timeouts)

Messages name the object, the field path and the rule, so a user can act on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


class CalderaError(Exception):
    """Root of every Caldera error."""


class PermanentError(CalderaError):
    """Bad input or a state that retrying will not fix."""


class TemporaryError(CalderaError):
    """A failure that may go away on retry (conflict, timeout, unavailable peer)."""


class InvalidQuantity(PermanentError, ValueError):
    """A quantity string that is not a valid Kubernetes quantity."""

    def __init__(self, text: object, reason: str = "") -> None:
        self.text = text
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}{detail}"
        )


@dataclass(frozen=True)
class FieldError:
    """One broken rule at one field path (``spec.tasks[0].replicas``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationFailed(PermanentError):
    """An object broke one or more rules; every broken rule is listed."""

    def __init__(self, obj_ref: str, errors: Sequence[FieldError]) -> None:
        self.obj_ref = obj_ref
        self.errors: tuple[FieldError, ...] = tuple(errors)
        joined = "; ".join(str(e) for e in self.errors)
        super().__init__(f"{obj_ref} is invalid: {joined}")

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.errors]

    def with_prefix(self, prefix: str) -> "ValidationFailed":
        """The same errors with the object reference prefixed (file, document index...)."""
        return ValidationFailed(f"{prefix}{self.obj_ref}", self.errors)


class DecodeError(PermanentError):
    """A document that is not parseable YAML/JSON, or not a mapping."""


class UnknownKind(PermanentError):
    """apiVersion/kind not served by Caldera."""

    def __init__(self, api_version: str, kind: str, known: Iterable[str], where: str = "") -> None:
        self.api_version = api_version
        self.kind = kind
        known_list = ", ".join(sorted(known))
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}unknown kind {kind!r} in apiVersion {api_version!r}; "
            f"Caldera knows: {known_list}"
        )


class NotACalderaKind(UnknownKind):
    """A manifest of a kind that belongs to another system (ServiceMonitor, ...)."""

    def __init__(self, api_version: str, kind: str, known: Iterable[str], where: str = "") -> None:
        super().__init__(api_version, kind, known, where)
        prefix = f"{where}: " if where else ""
        self.args = (
            f"{prefix}{kind} ({api_version or 'no apiVersion'}) is not a Caldera kind; "
            f"it is left to its own system. Caldera knows: {', '.join(sorted(known))}",
        )


class InvalidConfiguration(PermanentError):
    """A scheduler or placement configuration that cannot be used."""


class Conflict(TemporaryError):
    """Optimistic-concurrency conflict: the object changed underneath the writer."""
