"""Manifests of every kind, valid and mutated: 2xx or a 4xx Status, never 5xx or a hang; a refusal
changes nothing; whatever is accepted can be read back, listed, watched, placed and deleted."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from policies.kinds import lookup
from tests.fuzz.engine import Client, Finding, accepted_lifecycle, check_manifest, collection_path, report
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


#: YAML bodies (issue 42): fewer, the JSON run above already covers the values
YAML_EXAMPLES = 60


@pytest.mark.slow
def test_mutated_manifests_as_yaml_never_break_the_contract(fuzz_client: Client) -> None:
    placer = PurePlacer()
    findings: list[Finding] = []
    started = time.monotonic()

    @settings(FUZZ, max_examples=YAML_EXAMPLES)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        info, obj = data.draw(manifests())
        findings.extend(check_manifest(fuzz_client, info, obj, placer, as_yaml=True))

    one()
    assert not findings, report(findings, fuzz_client.sent, started)


@pytest.mark.parametrize("name", ["fz,rb", "fz=rb", "fz\\rb", "fz rb"])
def test_rolebinding_with_selector_characters_is_listed_and_watched(fuzz_client: Client, name: str) -> None:
    """bench/fuzz.py's finding (issue 42): an RBAC name may hold ``,``, ``=`` and ``\\``; a client that
    escapes them as client-go does lists and watches the object (it used to answer 400)."""
    info = lookup("rbac.authorization.k8s.io/v1", "RoleBinding")
    binding = {"apiVersion": info.api_version, "kind": "RoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"}]}
    started = time.monotonic()
    status, created = fuzz_client.call("POST", collection_path(info), binding)
    assert status == 201, created
    findings = accepted_lifecycle(fuzz_client, info, created, None)
    assert not findings, report(findings, fuzz_client.sent, started)
