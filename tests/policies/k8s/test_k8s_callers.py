"""Every former copy now answers the shared tables: each caller's own entry point is run on the
rows of its concept's table (so a caller that drifts from ``policies.k8s`` fails here)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from federation.cli import leader_flags
from member_agent import leader
from member_agent.cluster import sim_kubelet
from member_agent.scheduler.plugins import slo_time
from policies.models.fields import Duration, duration_seconds

HERE = Path(__file__).parent
DURATIONS: dict[str, list[dict[str, Any]]] = yaml.safe_load((HERE / "durations.yaml").read_text())
FLAG_PARSERS: dict[str, Callable[[str], float]] = {"caldera controllers flags": leader_flags.duration,
                                                   "agent leader flags": leader.duration}


@pytest.mark.parametrize("case", DURATIONS["flag"] + DURATIONS["parse"],
                         ids=[repr(c["text"]) for c in DURATIONS["flag"] + DURATIONS["parse"]])
@pytest.mark.parametrize("caller", sorted(FLAG_PARSERS))
def test_duration_flags(caller: str, case: dict[str, Any]) -> None:
    parse = FLAG_PARSERS[caller]
    text = case["text"]
    if text != text.strip() and "error" in case:
        pytest.skip("flags strip surrounding blanks")
    bare = text.strip().replace(".", "", 1).isdigit()  # flags also take plain seconds
    if "error" in case and not bare:
        with pytest.raises(argparse.ArgumentTypeError, match="is not a duration"):
            parse(text)
    else:
        seconds = case.get("seconds", float(text) if bare else case.get("ns", 0) / 1e9)
        assert parse(text) == pytest.approx(seconds)


@pytest.mark.parametrize("case", DURATIONS["parse"], ids=[repr(c["text"]) for c in DURATIONS["parse"]])
def test_duration_fields_and_plugins(case: dict[str, Any]) -> None:
    field = TypeAdapter(Duration)
    if "error" in case:
        with pytest.raises(ValidationError, match="is not a duration"):
            field.validate_python(case["text"])
        if case["text"].strip() == case["text"]:  # the plugin strips blanks
            with pytest.raises(ValueError):
                slo_time.parse_duration(case["text"])
        return
    seconds = case["ns"] / 1e9
    assert duration_seconds(field.validate_python(case["text"])) == seconds
    assert slo_time.parse_duration(case["text"]) == seconds
    # the sim kubelet clamps negative durations to 0 and reads junk as its default
    assert sim_kubelet.parse_duration(case["text"], 7.0) == max(0.0, seconds)


NODE_CASES: list[dict[str, Any]] = yaml.safe_load((HERE / "node_selector.yaml").read_text())


@pytest.mark.parametrize("case", NODE_CASES, ids=[c["name"] for c in NODE_CASES])
def test_agent_capacity_uses_the_node_selector_table(case: dict[str, Any]) -> None:
    from policies.capacity import NodeState, PodShape

    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if case["terms"] is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": case["terms"]}}}
    try:
        shape = PodShape.from_pod_spec(spec)
    except ValidationError:
        pytest.skip("the Pod model refuses this operator before matching")
    labels = {str(k): str(v) for k, v in case["labels"].items()}
    node = {"kind": "Node", "metadata": {"name": case.get("node", "n1"), "labels": labels}, "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "1Gi", "pods": "10"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    assert bool(NodeState([node], []).matching(shape)[0]) is case["expect"]


SELECTOR_CASES: list[dict[str, Any]] = [c for c in yaml.safe_load((HERE / "label_selector.yaml").read_text())
                                        if c["selector"] is not None]


@pytest.mark.parametrize("case", SELECTOR_CASES, ids=[c["name"] for c in SELECTOR_CASES])
def test_label_selector_callers(case: dict[str, Any]) -> None:
    from federation.controllers.matching import MATCH_LABELS, selector_precision
    from federation.placement.adapters import cluster_affinity
    from federation.placement.request import ClusterState, labels
    from federation.placement.selectors import affinity_matches
    from member_agent.scheduler.framework.pod_affinity import parse_pod_affinity
    from policies.k8s.label_selector import InvalidSelector

    wanted = {str(k): str(v) for k, v in case["labels"].items()}
    expect = case["expect"] is True  # an invalid selector ("error: ...") selects nothing
    job = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": "x", "labels": wanted}}
    rule = {"apiVersion": "v1", "kind": "ConfigMap", "labelSelector": case["selector"]}
    assert (selector_precision(rule, job, None) == MATCH_LABELS) is expect
    try:
        affinity = cluster_affinity({"labelSelector": case["selector"]})
    except InvalidSelector:
        assert not expect
    else:
        assert affinity_matches(affinity, ClusterState("c", labels(wanted))) is expect
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": case["selector"]}]}}}
    term = parse_pod_affinity(spec, "ns").affinity[0]
    assert term.matches("ns", wanted) is expect


@pytest.mark.parametrize("case", SELECTOR_CASES, ids=[c["name"] for c in SELECTOR_CASES])
def test_rbac_aggregation_uses_the_label_selector_table(case: dict[str, Any]) -> None:
    from federation.apiserver.rbac.evaluator import Policy

    wanted = {str(k): str(v) for k, v in case["labels"].items()}
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    aggregate = {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [case["selector"]]}}
    piece = {"metadata": {"name": "piece", "labels": wanted}, "rules": [rule]}
    policy = Policy.from_objects([], [aggregate, piece], [], [])
    assert bool(policy.cluster_roles["agg"]) is (case["expect"] is True)
