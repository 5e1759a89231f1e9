"""Manifests of every kind, valid and mutated: 2xx or a 4xx Status, never 5xx or a hang; a refusal
changes nothing; whatever is accepted can be read back, listed, watched, placed and deleted."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.engine import Client, Finding, check_manifest, report
from tests.fuzz.manifests import FUZZED, manifests
from tests.fuzz.placing import PurePlacer

#: Fixed and small: the CI run must stay well inside the suite's budget (bench/fuzz.py runs longer).
EXAMPLES = 200
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


@pytest.mark.slow
def test_every_sample_kind_is_accepted_and_round_trips(fuzz_client: Client) -> None:
    placer = PurePlacer()
    findings: list[Finding] = []
    started = time.monotonic()
    for info, sample in FUZZED:
        obj = dict(sample, metadata=dict(sample.get("metadata") or {}, name=f"valid-{info.plural}"))
        obj["metadata"].pop("namespace", None)
        findings.extend(check_manifest(fuzz_client, info, obj, placer))
    assert not findings, report(findings, fuzz_client.sent, started)


@pytest.mark.slow
def test_mutated_manifests_never_break_the_contract(fuzz_client: Client) -> None:
    placer = PurePlacer()
    findings: list[Finding] = []
    started = time.monotonic()

    @FUZZ
    @given(st.data())
    def one(data: st.DataObject) -> None:
        info, obj = data.draw(manifests())
        findings.extend(check_manifest(fuzz_client, info, obj, placer))

    one()
    assert not findings, report(findings, fuzz_client.sent, started)
