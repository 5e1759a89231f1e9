"""Query parameters and options checked as kube-apiserver checks them, before anything else runs.

* ``dryRun``: only ``All`` (422 Invalid ``CreateOptions.meta.k8s.io``, ``DeleteOptions``... as kube);
* ``propagationPolicy`` (query or DeleteOptions body): ``Orphan``, ``Background`` or ``Foreground``
  (422 Invalid ``DeleteOptions.meta.k8s.io``), and not together with ``orphanDependents``;
* ``timeoutSeconds`` of a watch: a non-negative whole number of seconds (400 BadRequest: ``nan``,
  ``inf``, ``1e309`` and negative values are refused, so no watch can be made to hang forever);
  absent or 0 means :data:`DEFAULT_WATCH_TIMEOUT_SECONDS`;
* ``limit``: a non-negative integer (400);
* ``continue``: a token this server issued (400 for anything else; 410 Expired when the list it
  continues is older than the watch history, as kube answers for a compacted resourceVersion).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

import orjson

from federation.apiserver import status as st

DRY_RUN_VALUES = ("All",)
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")
#: A watch without timeoutSeconds ends after this long (kube-apiserver's --min-request-timeout default);
#: clients re-watch from their last resourceVersion.
DEFAULT_WATCH_TIMEOUT_SECONDS = 1800
#: Version tag inside a continue token, like kube's "meta.k8s.io/v1".
CONTINUE_VERSION = "caldera/v1"
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
                 "delete": "DeleteOptions", "deletecollection": "DeleteOptions"}
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_INT64_MAX = 2**63 - 1


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def dry_run(values: list[str], verb: str) -> bool:
    """True for ``dryRun=All``; any other value is 422 Invalid on the verb's options kind."""
    bad = [v for v in values if v not in DRY_RUN_VALUES]
    if bad:
        raise st.invalid_options(_OPTIONS_KIND.get(verb, "CreateOptions"), "dryRun",
                                 f"Unsupported value: {orjson.dumps(values).decode()}: supported values: "
                                 f"{_quoted(DRY_RUN_VALUES)}")
    return bool(values)


def delete_options(body: Any, query_policy: str | None, query_dry_run: list[str]) -> tuple[dict[str, Any], bool]:
    """DeleteOptions from the body and the query, checked; and whether this is a dry run."""
    if body is not None and not isinstance(body, dict):
        raise st.bad_request("the request body must be a DeleteOptions object")
    options = dict(body or {})
    if query_policy is not None:
        options["propagationPolicy"] = query_policy
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in PROPAGATION_POLICIES:
        raise st.invalid_options("DeleteOptions", "propagationPolicy",
                                 f"Unsupported value: {orjson.dumps(policy).decode()}: supported values: "
                                 f"{_quoted(PROPAGATION_POLICIES)}")
    if policy is not None and options.get("orphanDependents") is not None:
        raise st.invalid_options("DeleteOptions", "propagationPolicy",
                                 "Invalid value: orphanDependents and deletionPropagation cannot be both set")
    body_dry_run = options.get("dryRun") or []
    if not isinstance(body_dry_run, list) or not all(isinstance(v, str) for v in body_dry_run):
        raise st.invalid_options("DeleteOptions", "dryRun", "Invalid value: must be a list of strings")
    return options, dry_run(list(query_dry_run) + body_dry_run, "delete")


def _integer(name: str, text: str, minimum: int = 0) -> int:
    if not _INTEGER.match(text.strip()):
        raise st.bad_request(f'{name}: strconv.ParseInt: parsing "{text}": invalid syntax (an integer is required)')
    value = int(text)
    if value > _INT64_MAX:
        raise st.bad_request(f'{name}: strconv.ParseInt: parsing "{text}": value out of range')
    if value < minimum:
        raise st.bad_request(f"{name}: Invalid value: {value}: must be greater than or equal to {minimum}")
    return value


def watch_timeout(text: str | None) -> float:
    """Seconds a watch may run: ``timeoutSeconds``, or the default when absent or 0."""
    if text is None or text == "":
        return float(DEFAULT_WATCH_TIMEOUT_SECONDS)
    return float(_integer("timeoutSeconds", text) or DEFAULT_WATCH_TIMEOUT_SECONDS)


def limit(text: str | None) -> int:
    """``limit`` (0 when absent: everything)."""
    return 0 if not text else _integer("limit", text)


def encode_continue(rv: int, namespace: str, name: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"v": CONTINUE_VERSION, "rv": rv,
                                                  "start": [namespace, name]})).decode()


def decode_continue(token: str, oldest_rv: int) -> tuple[tuple[str, str], int]:
    """((namespace, name) to continue after, the resourceVersion of the first page); 400 for a token
    not issued here, 410 when older than the history kept."""
    try:
        doc = orjson.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        doc = None
    start = doc.get("start") if isinstance(doc, dict) else None
    rv = doc.get("rv") if isinstance(doc, dict) else None
    if (not isinstance(doc, dict) or doc.get("v") != CONTINUE_VERSION or not isinstance(rv, int)
            or isinstance(rv, bool) or not isinstance(start, list) or len(start) != 2
            or not all(isinstance(p, str) for p in start)):
        raise st.bad_request(f"invalid continue token {token[:80]!r}: not a token this server issued "
                             f"(start a new list without 'continue')")
    if rv < oldest_rv:
        raise st.ApiError(410, "Expired", "The provided continue parameter is too old to display a consistent "
                                          "list result. You can start a new list without the continue "
                                          "parameter.")
    return (start[0], start[1]), rv
