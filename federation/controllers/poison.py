"""Poisoned objects: a reconcile that fails for a reason retrying cannot fix is reported once and
not retried until the object changes.

A failure is *transient* when the same call may succeed later: API answers 404 (a race with a
delete), 408, 409, 425, 429 and 5xx, connection errors and timeouts, and
:class:`~policies.errors.TemporaryError`. It is *permanent* at once for
:class:`~policies.errors.PermanentError` (bad input), arithmetic errors (the ``OverflowError`` of
a ``1e309`` quantity) and other 4xx answers; any other exception (a bug meeting odd data) counts as
permanent after :data:`POISON_AFTER_FAILURES` failures in a row, so a passing race still gets its
retries. A poisoned key is skipped while the object's version (as the controller defines it, e.g.
``(uid, generation)``) is the one that failed; the controller's ``report`` writes the condition and
the Event that say why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

from policies.errors import PermanentError, TemporaryError

log = logging.getLogger("caldera.controllers.poison")

#: Unexpected exceptions (not known to be permanent) get this many attempts before a key is poisoned.
POISON_AFTER_FAILURES = 5
TRANSIENT_STATUS = frozenset({404, 408, 409, 425, 429})

Version = Callable[[Hashable], Hashable]
Report = Callable[[Hashable, BaseException], Awaitable[None]]
Release = Callable[[Hashable], None]


class Reported(PermanentError):
    """A permanent failure the controller has already reported (condition and Event written)."""


def is_transient(err: BaseException) -> bool:
    if isinstance(err, ApiException):
        return err.status in TRANSIENT_STATUS or err.status == 0 or err.status >= 500
    return isinstance(err, (TemporaryError, OSError, asyncio.TimeoutError, aiohttp.ClientError))


def is_permanent(err: BaseException) -> bool:
    if isinstance(err, ApiException):
        return not is_transient(err)
    return isinstance(err, (PermanentError, ArithmeticError))


def describe(err: BaseException) -> str:
    """``OverflowError: int too large to convert to float`` (ApiExceptions by status and reason)."""
    if isinstance(err, Reported) and err.__cause__ is not None:
        return describe(err.__cause__)
    if isinstance(err, ApiException):
        return f"API answered {err.status} {err.reason}"
    return f"{type(err).__name__}: {err}"


@dataclass
class PoisonGuard:
    """Which keys are poisoned, at which version; ``report`` tells the user (condition + Event)."""

    version: Version
    report: Report
    #: called when a key is parked or skipped (e.g. to take it out of a scheduling queue)
    release: Release | None = None
    poisoned: dict[Hashable, Hashable] = field(default_factory=dict)

    def skip(self, key: Hashable, version: Hashable) -> bool:
        """True while ``key`` is poisoned at ``version``; a new version clears it."""
        if key not in self.poisoned:
            return False
        if self.poisoned[key] == version:
            if self.release is not None:
                self.release(key)
            return True
        del self.poisoned[key]
        return False

    def should_poison(self, err: BaseException, failures: int) -> bool:
        return not is_transient(err) and (is_permanent(err) or failures >= POISON_AFTER_FAILURES)

    async def poison(self, key: Hashable, version: Hashable, err: BaseException, name: str) -> None:
        self.poisoned[key] = version
        if self.release is not None:
            self.release(key)
        log.error("%s: %s is poisoned (%s); not retried until it changes", name, key, describe(err))
        if isinstance(err, Reported):
            return
        try:
            await self.report(key, err)
        except asyncio.CancelledError:
            raise
        except Exception as report_err:  # reporting is best effort; the key stays parked either way
            log.warning("%s: reporting poisoned %s failed: %s", name, key, report_err)
