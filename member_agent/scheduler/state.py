"""STATE documents (``caldera schedule -f STATE.yaml``) → snapshot + configuration.

A STATE is a multi-document YAML of Kubernetes objects as ``kubectl get -o yaml`` prints
them (``kind: List`` wrappers are unpacked). The scheduler ConfigMap is the ConfigMap
carrying ``data["volcano-scheduler.conf"]``; without one, Volcano's compiled-in default
configuration applies. Parsing only: the caller reads the file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

import yaml

from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.snapshot import Snapshot
from policies.errors import DecodeError
from policies.scheduler_conf import CONF_KEY, DEFAULT_CONF, SchedulerConf, from_configmap

SCHEDULER_KINDS = frozenset({"Node", "Pod", "PodGroup", "Queue", "PriorityClass", "ConfigMap", "List", "HyperNode"})


@dataclass(frozen=True)
class State:
    snapshot: Snapshot
    conf: SchedulerConf
    conf_source: str  # "ConfigMap ns/name" or "default"
    extra: tuple[dict[str, Any], ...]  # documents that are not scheduler objects (e.g. an Expectation)


def load_documents(text: str, source: str = "<state>") -> list[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise DecodeError(f"{source}: not valid YAML: {exc}") from exc
    out = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise DecodeError(f"{source}: document {index} is not a mapping")
        out.append(doc)
    return out


def _flatten(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc.get("kind") == "List":
            out.extend(_flatten(item for item in doc.get("items") or () if isinstance(item, dict)))
        else:
            out.append(doc)
    return out


def state_from_documents(docs: Iterable[dict[str, Any]], conf: SchedulerConf | None = None,
                         conf_source: str = "") -> State:
    objects, extra = [], []
    refused: list[str] = []
    found: SchedulerConf | None = None
    source = conf_source or "default"
    for doc in _flatten(docs):
        kind = doc.get("kind")
        if kind == "ConfigMap" and CONF_KEY in (doc.get("data") or {}):
            if found is None:
                found = from_configmap(doc)
                meta = doc.get("metadata") or {}
                source = f"ConfigMap {meta.get('namespace') or 'default'}/{meta.get('name')}"
        elif kind == "HyperNode":
            problem = hypernode_problem(doc)
            if problem:
                refused.append(problem)
            else:
                objects.append(doc)
        elif kind in SCHEDULER_KINDS:
            objects.append(doc)
        else:
            extra.append(doc)
    chosen = conf if conf is not None else (found or DEFAULT_CONF)
    if conf is not None:
        source = conf_source or "file"
    snapshot = build_snapshot(objects)
    if refused:
        snapshot = replace(snapshot, problems=(*refused, *snapshot.problems))
    return State(snapshot, chosen, source, tuple(extra))


def hypernode_problem(doc: dict[str, Any]) -> str:
    """Why a HyperNode manifest would not be admitted (webhook rules), or "" (it is then used)."""
    from policies.admission import admit
    from policies.codec import decode_object
    from policies.errors import CalderaError

    try:
        admit(decode_object(doc))
    except CalderaError as exc:
        return f"HyperNode {(doc.get('metadata') or {}).get('name')} refused, not used: {exc}"
    return ""
