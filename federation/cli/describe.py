"""``caldera describe KIND NAME``: metadata, spec summary, status, conditions and recent Events."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import yaml

from federation.apiserver.table import age_of
from federation.cli.common import add_connection_args, kind_from_name, namespace_for, run_with_client
from federation.status_view import job_share_lines
from policies.kinds import lookup

if TYPE_CHECKING:
    from federation.client import ResourceClient

NAME = "describe"
HELP = "show one object in detail, with its conditions and recent events"
EVENTS = lookup("v1", "Event")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", help="kind, plural or short name")
    parser.add_argument("name")
    add_connection_args(parser)


def _block(title: str, value: Any, indent: str = "  ") -> list[str]:
    if value in (None, {}, []):
        return [f"{title}:  <none>"]
    text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False).rstrip()
    return [f"{title}:", *(indent + line for line in text.splitlines())]


def _mapping(title: str, value: dict[str, str] | None) -> list[str]:
    if not value:
        return [f"{title}:".ljust(14) + "<none>"]
    items = sorted(value.items())
    first, *rest = [f"{k}={v}" for k, v in items]
    return [f"{title}:".ljust(14) + first, *(" " * 14 + line for line in rest)]


def _table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out = []
    for line in [headers, ["-" * len(h) for h in headers], *rows]:
        out.append(indent + "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    return out


def condition_lines(conditions: Any) -> list[str]:
    """Conditions as ``kubectl describe`` prints them (Type, Status, LastTransitionTime, Reason,
    Message), an empty cell where a field is unset. Volcano's untyped entries (one per phase
    change, ``{status: Running}``) are a phase history, not conditions: they get their own table."""
    items = [c for c in conditions or [] if isinstance(c, dict)]
    typed = [c for c in items if c.get("type")]
    history = [c for c in items if not c.get("type")]
    lines: list[str] = []
    if typed:
        rows = [[str(c["type"]), str(c.get("status") or "Unknown"), str(c.get("lastTransitionTime") or ""),
                 str(c.get("reason") or ""), _one_line(c.get("message"))] for c in typed]
        lines += ["Conditions:", *_table(["Type", "Status", "LastTransitionTime", "Reason", "Message"], rows)]
    if history:
        rows = [[str(c.get("status") or ""), str(c.get("lastTransitionTime") or "")] for c in history]
        lines += ["Phase History:", *_table(["Phase", "Since"], rows)]
    return lines


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def describe_text(obj: dict[str, Any], events: list[dict[str, Any]], now: datetime) -> str:
    meta = obj.get("metadata") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k != "kubectl.kubernetes.io/last-applied-configuration"}
    lines = ["Name:".ljust(14) + meta.get("name", "")]
    if meta.get("namespace"):
        lines.append("Namespace:".ljust(14) + meta["namespace"])
    lines += _mapping("Labels", meta.get("labels"))
    lines += _mapping("Annotations", annotations)
    lines += ["API Version:".ljust(14) + obj.get("apiVersion", ""), "Kind:".ljust(14) + obj.get("kind", ""),
              "Created:".ljust(14) + f"{meta.get('creationTimestamp', '')} ({age_of(meta.get('creationTimestamp', ''), now)} ago)",
              "Generation:".ljust(14) + str(meta.get("generation", "")),
              "UID:".ljust(14) + meta.get("uid", "")]
    if meta.get("deletionTimestamp"):
        lines.append("Deleting:".ljust(14) + f"since {meta['deletionTimestamp']} "
                     f"(finalizers: {', '.join(meta.get('finalizers') or []) or 'none'})")
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    spec = body.pop("spec", None)
    if spec is not None:
        lines += _block("Spec", spec)
    for key, value in body.items():
        lines += _block(key[0].upper() + key[1:], value)
    status = dict(obj.get("status") or {})
    conditions = status.pop("conditions", None)
    is_job = obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/")
    if is_job:
        status.pop("clusters", None)  # shown below as a table
    lines += _block("Status", status)
    if is_job:
        lines += job_share_lines(obj)
    lines += condition_lines(conditions)
    if events:
        rows = []
        for ev in sorted(events, key=lambda e: e.get("lastTimestamp") or ""):
            when = ev.get("lastTimestamp") or ev.get("eventTime") or ""
            count = int(ev.get("count") or 1)
            age = age_of(when, now) + (f" (x{count})" if count > 1 else "")
            source = (ev.get("source") or {}).get("component") or ev.get("reportingComponent") or ""
            rows.append([str(ev.get("type", "")), str(ev.get("reason", "")), age, source, str(ev.get("message", ""))])
        lines += ["Events:", *_table(["Type", "Reason", "Age", "From", "Message"], rows)]
    else:
        lines.append("Events:       <none>")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    info = kind_from_name(args.kind)
    namespace = namespace_for(info, args)

    async def body(rc: "ResourceClient") -> int:
        obj = await rc.get(info, args.name, namespace)
        uid = obj["metadata"].get("uid", "")
        listed = await rc.list(EVENTS, None, field_selector=f"involvedObject.uid={uid}")
        print(describe_text(obj, listed["items"], datetime.now(UTC)))
        return 0

    return run_with_client(args, body)
