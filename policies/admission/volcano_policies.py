"""Volcano lifecycle policies (event/exitCode -> action): the whitelists and their rules.

Shared by Job and VCJob admission, at job level (``spec.policies``) and task level
(``spec.tasks[i].policies``). Rules (volcano.md §8.1, §10.2): event XOR exitCode, exitCode
non-zero, events and actions from the user-facing sets, no duplicate events or exit codes,
and ``*`` must stand alone.
"""

from __future__ import annotations

from typing import Sequence

from policies.errors import FieldError
from policies.models.volcano_batch import LifecyclePolicy

ANY_EVENT = "*"
#: Events a user may write (internal ones, OutOfSync/CommandIssued/PodRunning, are rejected).
USER_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
#: Actions a user may write (SyncJob, EnqueueJob, SyncQueue, OpenQueue, CloseQueue are internal).
USER_ACTIONS = ("AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob",
                "CompleteJob", "ResumeJob")
_INTERNAL_EVENTS = ("OutOfSync", "CommandIssued", "PodRunning")
_INTERNAL_ACTIONS = ("SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue")


def validate_policies(policies: Sequence[LifecyclePolicy] | None, path: str) -> list[FieldError]:
    """Every broken policy rule, with paths under ``path`` (``spec.policies``)."""
    errors: list[FieldError] = []
    seen_events: dict[str, int] = {}
    seen_codes: dict[int, int] = {}
    items = list(policies or [])
    for index, policy in enumerate(items):
        at = f"{path}[{index}]"
        events = policy.all_events()
        if policy.event is not None and policy.events is not None:
            errors.append(FieldError(f"{at}.events", "must not specify both event and events"))
        if events and policy.exit_code is not None:
            errors.append(FieldError(f"{at}.exitCode", "must not specify event and exitCode simultaneously"))
        if not events and policy.exit_code is None:
            errors.append(FieldError(at, "either event and exitCode should be specified"))
        if policy.exit_code == 0:
            errors.append(FieldError(f"{at}.exitCode", "0 is not a valid error code"))
        if policy.action is None:
            errors.append(FieldError(f"{at}.action", "action is required"))
        elif policy.action not in USER_ACTIONS:
            why = " (internal action)" if policy.action in _INTERNAL_ACTIONS else ""
            errors.append(FieldError(f"{at}.action", f"invalid policy action {policy.action!r}{why}; "
                                                     f"valid actions: {', '.join(USER_ACTIONS)}"))
        event_field = f"{at}.event" if policy.event is not None else f"{at}.events"
        for event in events:
            if event not in USER_EVENTS:
                why = " (internal event)" if event in _INTERNAL_EVENTS else ""
                errors.append(FieldError(event_field, f"invalid policy event {event!r}{why}; "
                                                      f"valid events: {', '.join(USER_EVENTS)}"))
            elif event in seen_events:
                errors.append(FieldError(event_field, f"duplicate policy event found: {event!r} "
                                                      f"(already in {path}[{seen_events[event]}])"))
            else:
                seen_events[event] = index
        if policy.exit_code is not None and policy.exit_code != 0:
            if policy.exit_code in seen_codes:
                errors.append(FieldError(f"{at}.exitCode", f"duplicate exitCode found: {policy.exit_code} "
                                                           f"(already in {path}[{seen_codes[policy.exit_code]}])"))
            else:
                seen_codes[policy.exit_code] = index
    if ANY_EVENT in seen_events and len(items) > 1:
        errors.append(FieldError(f"{path}[{seen_events[ANY_EVENT]}]",
                                 "if there's * here, no other policy should be here"))
    return errors
