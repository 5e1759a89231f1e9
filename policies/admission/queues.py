"""Looking up stored queues for admission: may a job or PodGroup be submitted to this queue?

Only online (an API server behind the context); offline every check here is skipped.
"""

from __future__ import annotations

from typing import Any, Optional

from policies.admission import AdmissionContext
from policies.errors import FieldError

ROOT_QUEUE = "root"


def stored_queue(ctx: AdmissionContext, name: str) -> Optional[dict[str, Any]]:
    if not ctx.online or ctx.get is None:
        return None
    return ctx.get("Queue", None, name)


def queue_state(queue: dict[str, Any]) -> str:
    """The queue's ``status.state``; a queue the controller has not synced yet counts as Open."""
    return str((queue.get("status") or {}).get("state") or "Open")


def child_queues(ctx: AdmissionContext, name: str) -> list[str]:
    if not ctx.online or ctx.list is None:
        return []
    return sorted(str(q.get("metadata", {}).get("name")) for q in ctx.list("Queue", None)
                  if (q.get("spec") or {}).get("parent") == name)


def check_queue_accepts(ctx: AdmissionContext, name: str, path: str, what: str,
                        leaf_only: bool = True) -> list[FieldError]:
    """Volcano's submit rules: the queue exists, is Open, is not root, and is a leaf."""
    if not ctx.online or ctx.get is None:
        return []
    if name == ROOT_QUEUE and leaf_only:
        return [FieldError(path, f"can not submit {what} to root queue")]
    queue = stored_queue(ctx, name)
    if queue is None:
        return [FieldError(path, f"unable to find {what} queue {name!r}")]
    state = queue_state(queue)
    if state != "Open":
        return [FieldError(path, f"can only submit {what} to queue with state `Open`, "
                                 f"queue `{name}` status is `{state}`")]
    if leaf_only:
        children = child_queues(ctx, name)
        if children:
            return [FieldError(path, f"can only submit {what} to leaf queue, queue `{name}` has "
                                     f"{len(children)} child queues: {', '.join(children)}")]
    return []
