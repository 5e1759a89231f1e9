"""The audit log: one kube ``audit.k8s.io/v1`` Event per request, as JSON lines.

``--audit-log-path FILE`` (``-`` = stdout) turns it on; ``--audit-policy-file`` gives kube's
audit Policy (rules matched in order: ``users``, ``userGroups``, ``verbs``, ``resources``
{group, resources (``pods``, ``pods/status``, ``*``), resourceNames}, ``namespaces``,
``nonResourceURLs``; the first match sets the level ``None``/``Metadata``/``Request``/
``RequestResponse``; ``omitStages`` top level and per rule). Without a policy file every request
is logged at ``Metadata`` with the ``RequestReceived`` stage omitted, so one line per request.
The file is rotated when it would grow past ``--audit-log-maxsize`` MB, keeping
``--audit-log-maxbackup`` old files named ``<name>-<timestamp>.<ext>`` as kube's (lumberjack) are.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from federation import private_files

Obj = dict[str, Any]
LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


class AuditPolicyError(ValueError):
    pass


@dataclass(frozen=True)
class RequestInfo:
    """kube's RequestInfo, from the path alone."""

    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""


def request_info(path: str) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(False)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) >= 2:
        namespace = rest[1]
    return RequestInfo(True, group, version, namespace, rest[0], rest[1] if len(rest) > 1 else "",
                       rest[2] if len(rest) > 2 else "")


def request_verb(method: str, info: RequestInfo, watch: bool) -> str:
    """kube's verb for a request: get/list/watch/create/update/patch/delete/deletecollection, or the
    lowercase method of a non-resource request."""
    if not info.resource_request:
        return method.lower()
    if method == "GET":
        return "get" if info.name else ("watch" if watch else "list")
    named = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    if method == "DELETE" and not info.name:
        return "deletecollection"
    return named.get(method, method.lower())


@dataclass(frozen=True)
class Rule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[Obj, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()

    def matches(self, user: str, groups: tuple[str, ...], verb: str, info: RequestInfo, path: str) -> bool:
        if self.users and user not in self.users:
            return False
        if self.user_groups and not set(groups) & set(self.user_groups):
            return False
        if self.verbs and verb not in self.verbs:
            return False
        if self.resources or self.namespaces:
            if not info.resource_request:
                return False
            if self.namespaces and info.namespace not in self.namespaces:
                return False
            if self.resources and not any(_resource_matches(r, info) for r in self.resources):
                return False
        if self.non_resource_urls:
            if info.resource_request:
                return False
            return any(u == path or (u.endswith("*") and path.startswith(u[:-1])) for u in self.non_resource_urls)
        return True


def _resource_matches(group_resources: Obj, info: RequestInfo) -> bool:
    """kube's ruleMatchesResource: ``*``, ``pods``, ``pods/status``, ``*/status``, ``pods/*``."""
    if (group_resources.get("group") or "") != info.api_group:
        return False
    names = group_resources.get("resourceNames") or []
    if names and info.name not in names:
        return False
    wanted = group_resources.get("resources") or []
    if not wanted:
        return True
    combined = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    for resource in wanted:
        if resource in ("*", combined):
            return True
        if info.subresource and resource == f"*/{info.subresource}":
            return True
        if resource.endswith("/*") and resource[:-2] == info.resource:
            return True
    return False


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = (Rule("Metadata"),)
    omit_stages: tuple[str, ...] = ("RequestReceived",)

    def level(self, user: str, groups: tuple[str, ...], verb: str, info: RequestInfo, path: str) -> tuple[
            str, tuple[str, ...]]:
        for rule in self.rules:
            if rule.matches(user, groups, verb, info, path):
                return rule.level, self.omit_stages + rule.omit_stages
        return "None", self.omit_stages


def load_policy(path: Path) -> Policy:
    """kube's audit Policy file; a clear error names the file and the rule otherwise."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise AuditPolicyError(f"{path}: cannot read the audit policy: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "Policy" or doc.get("apiVersion") != "audit.k8s.io/v1":
        raise AuditPolicyError(f"{path}: expected apiVersion audit.k8s.io/v1, kind Policy")

    def stages(where: str, values: Any) -> tuple[str, ...]:
        bad = [s for s in values or () if s not in STAGES]
        if bad:
            raise AuditPolicyError(f"{path}: {where}.omitStages: unknown stage {bad[0]!r} (one of {', '.join(STAGES)})")
        return tuple(values or ())

    rules = []
    for i, raw in enumerate(doc.get("rules") or ()):
        where = f"rules[{i}]"
        if not isinstance(raw, dict) or raw.get("level") not in LEVELS:
            raise AuditPolicyError(f"{path}: {where}.level: must be one of {', '.join(LEVELS)}")
        if raw.get("nonResourceURLs") and (raw.get("resources") or raw.get("namespaces")):
            raise AuditPolicyError(f"{path}: {where}: rules cannot apply to both regular resources and non-resource "
                                   "URLs")
        rules.append(Rule(raw["level"], tuple(raw.get("users") or ()), tuple(raw.get("userGroups") or ()),
                          tuple(raw.get("verbs") or ()), tuple(raw.get("resources") or ()),
                          tuple(raw.get("namespaces") or ()), tuple(raw.get("nonResourceURLs") or ()),
                          stages(where, raw.get("omitStages"))))
    return Policy(tuple(rules), stages("policy", doc.get("omitStages")))


def micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class RotatingWriter:
    """Append lines to ``path``, rotating it by size (``max_bytes`` 0: never)."""

    path: Path
    max_bytes: int = 0
    max_backups: int = 0
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = private_files.open_append(self.path)  # 0600 from creation; kept open
        self._size = self._handle.tell()

    def write(self, line: bytes) -> None:
        if self.max_bytes and self._size and self._size + len(line) > self.max_bytes:
            self._rotate()
        self._handle.write(line)
        self._handle.flush()
        self._size += len(line)

    def _rotate(self) -> None:
        self._handle.close()
        stamp = self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")[:-3]
        backup = self.path.with_name(f"{self.path.stem}-{stamp}{self.path.suffix}")
        n = 1
        while backup.exists():  # two rotations in the same millisecond
            backup = self.path.with_name(f"{self.path.stem}-{stamp}-{n}{self.path.suffix}")
            n += 1
        os.replace(self.path, backup)
        if self.max_backups:
            old = sorted(self.backups(), key=lambda p: p.stat().st_mtime_ns)
            for stale in old[:-self.max_backups]:
                stale.unlink(missing_ok=True)
        self._handle = private_files.open_append(self.path)
        self._size = 0

    def backups(self) -> list[Path]:
        return [p for p in self.path.parent.glob(f"{self.path.stem}-*{self.path.suffix}") if p != self.path]

    def close(self) -> None:
        self._handle.close()


class _Stdout:
    def write(self, line: bytes) -> None:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()

    def close(self) -> None:
        pass


class AuditLog:
    """Builds kube audit Events and writes them (see :func:`event`)."""

    def __init__(self, path: str | Path, policy: Policy | None = None, max_size_mb: int = 0, max_backups: int = 0,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.policy = policy or Policy()
        self.clock = clock
        self.writer: RotatingWriter | _Stdout = (_Stdout() if str(path) == "-" else
                                                 RotatingWriter(Path(path), max_size_mb * 1024 * 1024, max_backups,
                                                                clock))

    def new_id(self) -> str:
        return str(uuid.uuid4())

    def emit(self, event: Obj) -> None:
        self.writer.write(orjson.dumps(event) + b"\n")

    def close(self) -> None:
        self.writer.close()


def _user(user: Any) -> Obj:
    if user is None:
        return {}
    return {"username": user.name, "uid": user.uid, "groups": list(user.groups)}


def _object_ref(info: RequestInfo, response_obj: Obj | None, verb: str) -> Obj:
    ref = {"resource": info.resource, "namespace": info.namespace, "name": info.name, "apiGroup": info.api_group,
           "apiVersion": info.api_version, "subresource": info.subresource}
    if verb == "create" and not info.subresource and isinstance(response_obj, dict):
        meta = response_obj.get("metadata") or {}
        ref.update(name=meta.get("name") or "", uid=meta.get("uid") or "",
                   resourceVersion=meta.get("resourceVersion") or "")
    return {k: v for k, v in ref.items() if v}


def _json(raw: bytes | None) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


@dataclass
class Exchange:
    """What one request/response pair gives the audit log."""

    path: str
    uri: str
    method: str
    verb: str
    user: Any
    source_ip: str
    user_agent: str
    code: int
    received: datetime
    request_body: bytes | None = None
    response_body: bytes | None = None
    decision: tuple[bool, str] | None = None


#: the stages of a short request; a long-running one (a watch) adds ResponseStarted between them, written
#: when its headers go out, because its ResponseComplete may come hours later (kube-apiserver does the same)
SHORT_REQUEST_STAGES = ("RequestReceived", "ResponseComplete")


def is_long_running(verb: str) -> bool:
    """kube-apiserver's long-running requests that Caldera serves: watches."""
    return verb == "watch"


def events(log: AuditLog, audit_id: str, exchange: Exchange,
           stages: tuple[str, ...] = SHORT_REQUEST_STAGES) -> list[Obj]:
    """The audit Events of ``stages`` for one exchange under ``log.policy`` (none at level None)."""
    info = request_info(exchange.path)
    user = exchange.user
    name, groups = (user.name, tuple(user.groups)) if user is not None else ("", ())
    level, omitted = log.policy.level(name, groups, exchange.verb, info, exchange.path)
    if level == "None":
        return []
    response_obj = _json(exchange.response_body)
    status: Obj = {"metadata": {}, "code": exchange.code}
    if exchange.code >= 400 and isinstance(response_obj, dict) and response_obj.get("kind") == "Status":
        status.update({k: response_obj[k] for k in ("status", "message", "reason") if k in response_obj})
    base: Obj = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": audit_id,
                 "requestURI": exchange.uri, "verb": exchange.verb, "user": _user(user),
                 "sourceIPs": [exchange.source_ip] if exchange.source_ip else [], "userAgent": exchange.user_agent}
    if info.resource_request:
        base["objectRef"] = _object_ref(info, response_obj, exchange.verb)
    if exchange.decision is not None:
        allowed, reason = exchange.decision
        base["annotations"] = {"authorization.k8s.io/decision": "allow" if allowed else "forbid",
                               "authorization.k8s.io/reason": reason}
    received = micro_time(exchange.received)
    wanted = {stage for stage in stages if stage not in omitted}
    out = []
    if "RequestReceived" in wanted:
        out.append({**base, "stage": "RequestReceived", "requestReceivedTimestamp": received,
                    "stageTimestamp": received})
    if "ResponseStarted" in wanted:
        out.append({**base, "stage": "ResponseStarted", "responseStatus": status,
                    "requestReceivedTimestamp": received, "stageTimestamp": micro_time(log.clock())})
    if "ResponseComplete" in wanted:
        done: Obj = {**base, "stage": "ResponseComplete", "responseStatus": status,
                     "requestReceivedTimestamp": received, "stageTimestamp": micro_time(log.clock())}
        if level in ("Request", "RequestResponse") and exchange.request_body:
            request_obj = _json(exchange.request_body)
            if request_obj is not None:
                done["requestObject"] = request_obj
        if level == "RequestResponse" and response_obj is not None:
            done["responseObject"] = response_obj
        out.append(done)
    return out
