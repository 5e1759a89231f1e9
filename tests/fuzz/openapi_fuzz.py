"""Schemathesis against the served OpenAPI v3: every operation of every group, a few generated
requests each. Shared by ``test_fuzz_openapi.py`` (fixed seed) and ``bench/fuzz.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.engine import REQUEST_TIMEOUT, Client, Finding, decode, judge_answer


def group_documents(client: Client) -> Iterator[tuple[str, dict[str, Any]]]:
    """(group-version path, OpenAPI document) for every group the server lists."""
    status, index = client.call("GET", "/openapi/v3")
    assert status == 200, index
    for name, ref in sorted(index["paths"].items()):
        status, doc = client.call("GET", ref["serverRelativeURL"])
        assert status == 200, (name, doc)
        yield name, doc


def load(doc: dict[str, Any]) -> Any:
    """The schemathesis schema of one document (raises if schemathesis cannot read it)."""
    return schemathesis.openapi.from_dict(doc)


def operations(schema: Any) -> list[Any]:
    """Every operation; a broken one (an unresolvable reference...) raises here."""
    return [result.ok() for result in schema.get_all_operations()]


def fuzz_operation(client: Client, operation: Any, examples: int, derandomize: bool = True) -> list[Finding]:
    """``examples`` generated requests to ``operation``; what broke the contract."""
    findings: list[Finding] = []
    headers = {"Authorization": f"Bearer {client.token}"}

    @settings(max_examples=examples, derandomize=derandomize, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def one(case: Any) -> None:
        if "namespace" in (case.path_parameters or {}):
            case.path_parameters["namespace"] = "default"  # reach admission, not just 404 Namespace
        request = f"{case.method.upper()} {operation.path}"
        client.sent += 1
        try:
            response = case.call(base_url=client.url, headers=headers, timeout=REQUEST_TIMEOUT)
        except requests.Timeout:
            findings.append(Finding("hang", request, f"no answer in {REQUEST_TIMEOUT}s", case.as_curl_command()))
            return
        body = decode(response.content)
        findings.extend(Finding(f.kind, f.request, f.detail, case.as_curl_command()[:600])
                        for f in judge_answer(response.status_code, body, request))

    one()
    return findings
