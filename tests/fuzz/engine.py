"""Fuzzing machinery shared by ``tests/fuzz`` (fixed seed, small counts, CI) and ``bench/fuzz.py``
(random seeds, for minutes).

Every request goes through :class:`Client`, which has a bounded timeout (a request that takes
longer is a *hang*) and counts requests. A run collects :class:`Finding` s: a 5xx, a hang, an
error that is not a ``Status``, a refusal that changed the store, or an accepted object that
cannot be read back, listed, watched, placed or deleted. :func:`distinct` groups them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson
import requests
import yaml

from policies.kinds import KindInfo

#: A request slower than this is a hang (a refused watch answers at once; a valid one is 1 s).
REQUEST_TIMEOUT = 10.0
#: How long the read-back watch of an accepted object runs.
WATCH_SECONDS = 1

Obj = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    """One failure: ``kind`` (5xx, hang, not-status, store-changed, read-back...), the request, a detail."""

    kind: str
    request: str
    detail: str
    example: str = field(default="", compare=False)

    def signature(self) -> tuple[str, str, str]:
        """What makes two findings the same bug: the kind, the request shape, the first line."""
        shape = " ".join(part if not part.startswith("fz-") else "<name>" for part in self.request.split("/"))
        return self.kind, shape.split("?")[0], self.detail.splitlines()[0][:160] if self.detail else ""


class Hang(Exception):
    pass


@dataclass
class Client:
    url: str
    token: str
    sent: int = 0
    session: requests.Session = field(default_factory=requests.Session)

    def call(self, method: str, path: str, body: Any = None, content_type: str | None = "application/json",
             params: dict[str, Any] | None = None, stream: bool = False) -> tuple[int, Any]:
        """(status, first JSON document of the body or its text); :class:`Hang` past REQUEST_TIMEOUT."""
        headers = {"Authorization": f"Bearer {self.token}"}
        data = body if body is None or isinstance(body, bytes) else encode(body)
        if content_type and data is not None:
            headers["Content-Type"] = content_type
        self.sent += 1
        try:
            with self.session.request(method, self.url + path, data=data, headers=headers, params=params,
                                      timeout=REQUEST_TIMEOUT, stream=stream) as resp:
                if stream:  # a watch: its first event is enough (the stream runs until its timeout)
                    return resp.status_code, decode(next(resp.iter_lines(), b""))
                return resp.status_code, decode(resp.content)
        except requests.Timeout as exc:
            raise Hang(f"{method} {path}: no answer in {REQUEST_TIMEOUT}s") from exc


def escape_field_value(value: str) -> str:
    """client-go's ``fields.EscapeValue``: RBAC names may hold ``,`` and ``=``, which a field selector
    value must escape (the fuzzer once listed RoleBinding ``a,b`` unescaped and got 400; issue 42)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def yaml_body(body: Any) -> bytes | None:
    """``body`` as a YAML document, or None when YAML cannot carry it the same way (tuples, bytes...)."""
    try:
        return yaml.safe_dump(body, allow_unicode=True).encode()
    except (yaml.YAMLError, TypeError, ValueError):
        return None


def encode(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # integers beyond 64 bits: the stdlib writes them
        return json.dumps(body).encode()


def decode(raw: bytes) -> Any:
    try:
        return orjson.loads(raw.split(b"\n", 1)[0] or b"null")
    except orjson.JSONDecodeError:
        return raw.decode(errors="replace")


def judge_answer(status: int, body: Any, request: str) -> list[Finding]:
    """The server's side of the contract: 2xx, or 4xx with a Status; never 5xx."""
    if status >= 500:
        return [Finding("5xx", request, f"{status}: {_message(body)}")]
    if status >= 400 and not (isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == status):
        return [Finding("not-status", request, f"{status} without a Status body: {str(body)[:200]}")]
    return []


def _message(body: Any) -> str:
    return str(body.get("message")) if isinstance(body, dict) else str(body)[:300]


def collection_path(info: KindInfo, namespace: str = "default") -> str:
    root = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
    return f"{root}/namespaces/{namespace}/{info.plural}" if info.namespaced else f"{root}/{info.plural}"


def listing(client: Client, info: KindInfo) -> tuple[str, list[bytes]]:
    status, body = client.call("GET", collection_path(info))
    if status != 200 or not isinstance(body, dict):
        return f"list answered {status}", []
    return str(body["metadata"].get("resourceVersion")), sorted(orjson.dumps(o) for o in body.get("items") or [])


def check_manifest(client: Client, info: KindInfo, manifest: Any, placer: Any = None,
                   as_yaml: bool = False) -> list[Finding]:
    """POST ``manifest`` (as JSON, or YAML with ``as_yaml``); a refusal must change nothing; an
    acceptance must be readable end to end."""
    try:
        return _check_manifest(client, info, manifest, placer, as_yaml)
    except Hang as exc:
        return [Finding("hang", str(exc).split(":")[0], str(exc), encode(manifest).decode()[:600])]


def _check_manifest(client: Client, info: KindInfo, manifest: Any, placer: Any, as_yaml: bool) -> list[Finding]:
    path = collection_path(info)
    request = f"POST {path}" + (" (YAML)" if as_yaml else "")
    before = listing(client, info)
    yaml_doc = yaml_body(manifest) if as_yaml else None
    if yaml_doc is not None:
        status, body = client.call("POST", path, yaml_doc, content_type="application/yaml")
    else:
        status, body = client.call("POST", path, manifest)
    findings = judge_answer(status, body, request)
    if findings:
        return [Finding(f.kind, f.request, f.detail, encode(manifest).decode()[:600]) for f in findings]
    if status >= 400:
        if listing(client, info) != before:
            return [Finding("store-changed", request, f"refused with {status} but the list changed: "
                                                      f"{_message(body)}")]
        return []
    return accepted_lifecycle(client, info, body, placer)


def accepted_lifecycle(client: Client, info: KindInfo, created: Obj, placer: Any) -> list[Finding]:
    """Read back, list, watch, place (Jobs) and delete an accepted object."""
    name = created["metadata"]["name"]
    item = f"{collection_path(info)}/{quote(name)}"
    findings: list[Finding] = []
    status, got = client.call("GET", item)
    if status != 200 or got != created:
        findings.append(Finding("read-back", f"GET {item}", f"{status}: read back differs from the create answer"))
    selector = f"metadata.name={escape_field_value(name)}"
    status, listed = client.call("GET", collection_path(info), params={"fieldSelector": selector})
    names = [o["metadata"]["name"] for o in (listed.get("items") or [])] if isinstance(listed, dict) else []
    if status != 200 or names != [name]:
        findings.append(Finding("not-listed", f"LIST {info.plural}", f"{status}: {names}"))
    rv = int(created["metadata"]["resourceVersion"])
    status, event = client.call("GET", collection_path(info), params={
        "watch": "true", "resourceVersion": str(rv - 1), "timeoutSeconds": str(WATCH_SECONDS),
        "fieldSelector": selector}, stream=True)
    seen = event.get("object", {}).get("metadata", {}).get("name") if isinstance(event, dict) else None
    if status != 200 or seen != name:
        findings.append(Finding("not-watched", f"WATCH {info.plural}", f"{status}: first event {str(event)[:200]}"))
    if placer is not None and info.kind == "Job" and info.group == "batch.volcano.sh":
        problem = placer(got if isinstance(got, dict) else created)
        if problem:
            findings.append(Finding("placement", f"PLACE {info.plural}", problem))
    status, gone = client.call("DELETE", item)
    findings.extend(judge_answer(status, gone, f"DELETE {item}"))
    if status >= 400:
        findings.append(Finding("delete", f"DELETE {item}", f"{status}: {_message(gone)}"))
    else:
        status, after = client.call("GET", item)
        if status != 404 and not (isinstance(after, dict) and after["metadata"].get("deletionTimestamp")):
            findings.append(Finding("delete", f"GET {item}", f"{status} after DELETE"))
    return findings


def distinct(findings: list[Finding]) -> dict[tuple[str, str, str], list[Finding]]:
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.signature(), []).append(finding)
    return groups


def report(findings: list[Finding], requests_sent: int, started: float) -> str:
    groups = distinct(findings)
    lines = [f"{requests_sent} requests in {time.monotonic() - started:.1f}s; {len(findings)} failures, "
             f"{len(groups)} distinct"]
    for (kind, shape, detail), members in sorted(groups.items()):
        lines.append(f"  [{kind}] x{len(members)} {shape}: {detail}")
        if members[0].example:
            lines.append(f"      e.g. {members[0].example}")
    return "\n".join(lines)
