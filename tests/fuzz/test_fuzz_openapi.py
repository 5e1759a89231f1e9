"""Schemathesis against every group's served OpenAPI v3 document: the documents load, and generated
requests for every operation answer 2xx or a 4xx Status, never 5xx, never a hang."""

from __future__ import annotations

import time

import pytest

from tests.fuzz.engine import Client, Finding, report
from tests.fuzz.openapi_fuzz import fuzz_operation, group_documents, load, operations

#: Per operation, fixed seed. About 180 operations; generating a Job or a policy body takes seconds on a
#: loaded 2-core machine, so CI sends one request per operation (~15 s) and bench/fuzz.py sends many.
EXAMPLES_PER_OPERATION = 1


@pytest.mark.slow
def test_every_group_loads_and_generated_requests_never_break_the_contract(fuzz_client: Client) -> None:
    started = time.monotonic()
    findings: list[Finding] = []
    counts: dict[str, int] = {}
    for name, doc in group_documents(fuzz_client):
        ops = operations(load(doc))  # schemathesis must read every document and resolve every operation
        counts[name] = len(ops)
        for operation in ops:
            findings.extend(fuzz_operation(fuzz_client, operation, EXAMPLES_PER_OPERATION))
    assert len(counts) >= 10 and all(counts.values()), counts
    assert not findings, report(findings, fuzz_client.sent, started)
