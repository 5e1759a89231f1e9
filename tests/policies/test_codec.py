"""The codec: multi-document YAML/JSON in, typed objects out, errors with file/document/line/path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.codec import (
    NotAnObject,
    WrongApiVersion,
    admit_all,
    decode_one,
    decode_path,
    decode_paths,
    decode_text,
    dump,
    name_of,
)
from policies.codec_paths import format_path
from policies.errors import NotACalderaKind, UnknownKind, ValidationFailed
from policies.models.karmada_cluster import Cluster
from policies.models.karmada_policy import PropagationPolicy

POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: p
spec:
  resourceSelectors:
    - apiVersion: batch.volcano.sh/v1alpha1
      kind: Job
"""
CLUSTER = """\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: cluster-a
spec:
  syncMode: Pull
status:
  resourceSummary:
    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: 8}
"""


@pytest.mark.parametrize(("parts", "expected"), [
    (["spec", "tasks", 0, "template", "spec", "containers", 1, "resources", "limits", "cpu"],
     "spec.tasks[0].template.spec.containers[1].resources.limits.cpu"),
    (["spec", "minResources", "nvidia.com/gpu"], "spec.minResources[nvidia.com/gpu]"),
    ([], ""),
    ([3, "name"], "[3].name"),
])
def test_format_path(parts: list[str | int], expected: str) -> None:
    assert format_path(parts) == expected


def test_multi_document_with_empty_documents_and_comments() -> None:
    text = f"# leading comment\n---\n{POLICY}---\n# only a comment\n---\n\n---\n{CLUSTER}"
    result = decode_text(text, "x.yaml")
    assert result.ok
    assert [type(d.obj) for d in result.objects] == [PropagationPolicy, Cluster]
    assert [d.origin.index for d in result.objects] == [1, 2]
    assert result.objects[0].origin.line == 3
    assert result.objects[1].origin.line == text.splitlines().index("apiVersion: cluster.karmada.io/v1alpha1") + 1


def test_bad_document_does_not_stop_the_others() -> None:
    bad = POLICY.replace("kind: Job", "kind: Job\n  placment: {}")
    text = f"{CLUSTER}---\n{bad}---\nfoo: [unclosed\n---\n{POLICY}"
    result = decode_text(text, "many.yaml")
    assert len(result.objects) == 2
    assert [e.origin.index for e in result.errors] == [2, 3]
    placment = result.errors[0]
    assert isinstance(placment.error, ValidationFailed)
    assert placment.paths == ["spec.placment"]
    assert "did you mean 'placement'" in placment.describe()
    assert placment.line_of("spec.placment") == text.splitlines().index("  placment: {}") + 1
    assert "not valid YAML at line" in placment.describe() or "not valid YAML at line" in result.errors[1].describe()


def test_error_names_file_document_line_object_and_path(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("---\n" + CLUSTER.replace('cpu: "64"', "cpu: 64 cores"), encoding="utf-8")
    [error] = decode_path(path).errors
    text = error.describe()
    assert text.startswith(f"{path}:2 (document 1) cluster.karmada.io/v1alpha1 Cluster cluster-a is invalid:")
    assert "status.resourceSummary.allocatable.cpu (line 10)" in text
    assert "'64 cores'" in text


def test_missing_field_uses_wire_name_and_parent_line() -> None:
    text = POLICY.replace("    - apiVersion: batch.volcano.sh/v1alpha1\n      kind: Job\n", "    - kind: Job\n")
    [error] = decode_text(text).errors
    assert error.paths == ["spec.resourceSelectors[0].apiVersion"]
    assert error.line_of("spec.resourceSelectors[0].apiVersion") == 7


def test_unknown_and_foreign_kinds() -> None:
    result = decode_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: HyperJob\nmetadata: {name: h}\n"
                         "---\napiVersion: batch.volcano.sh/v1beta1\nkind: Job\n"
                         "---\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
                         "---\ngroups:\n- name: g\n  rules: []\n")
    unknown, wrong = result.errors
    assert type(unknown.error) is UnknownKind and "Caldera knows: " in str(unknown.error)
    assert "PropagationPolicy (policy.karmada.io/v1alpha1)" in str(unknown.error)
    assert isinstance(wrong.error, WrongApiVersion) and wrong.paths == ["apiVersion"]
    assert "'batch.volcano.sh/v1alpha1'" in str(wrong.error)
    assert [type(w.error) for w in result.warnings] == [NotACalderaKind, NotACalderaKind]
    assert "Prometheus rule groups" in str(result.warnings[1].error)


@pytest.mark.parametrize(("text", "needle"), [
    ("data:\n  volcano-scheduler.conf: |\n    actions: allocate\n", "volcano-scheduler ConfigMap"),
    ("plugins:\n  ssh: []\n", "spec.plugins"),
    ("- a\n- b\n", "the document is a list"),
    ("just text\n", "not a Kubernetes object"),
])
def test_fragments_are_not_objects(text: str, needle: str) -> None:
    [error] = decode_text(text).errors
    assert isinstance(error.error, NotAnObject)
    assert needle in str(error.error)


def test_objects_written_without_separator_are_a_duplicate_key_error() -> None:
    [error] = decode_text(POLICY + POLICY).errors
    assert "duplicate key 'apiVersion'" in str(error.error)
    assert "'---'" in str(error.error)
    assert error.origin.line == len(POLICY.splitlines()) + 1


def test_json_object_and_list() -> None:
    policy = yaml.safe_load(POLICY)
    single = decode_text(json.dumps(policy, indent=2), "p.json")
    assert single.ok and isinstance(single.objects[0].obj, PropagationPolicy)
    listed = decode_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [policy, yaml.safe_load(CLUSTER)]}))
    assert [d.obj.kind for d in listed.objects] == ["PropagationPolicy", "Cluster"]
    bad = dict(policy, spec={"resourceSelectors": "Job"})
    text = json.dumps(bad, indent=2)
    [error] = decode_text(text, "bad.json").errors
    assert error.paths == ["spec.resourceSelectors"]
    expected = next(n for n, line in enumerate(text.splitlines(), 1) if '"resourceSelectors"' in line)
    assert error.line_of("spec.resourceSelectors") == expected


def test_directory_is_read_recursively_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "cluster.yml").write_text(CLUSTER, encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps(yaml.safe_load(POLICY)), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a manifest", encoding="utf-8")
    result = decode_path(tmp_path)
    assert [d.obj.kind for d in result.objects] == ["PropagationPolicy", "Cluster"]
    both = decode_paths([tmp_path / "a.json", tmp_path / "b"])
    assert len(both.objects) == 2


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(POLICY))
    result = decode_path("-")
    assert result.ok and result.objects[0].origin.source == "<stdin>"


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    [error] = decode_path(tmp_path / "missing.yaml").errors
    assert "cannot read" in str(error.error)


def test_dump_formats() -> None:
    policy = decode_one(POLICY)
    cluster = decode_one(CLUSTER)
    text = dump([policy, cluster])
    assert text.startswith("---\napiVersion: policy.karmada.io/v1alpha1")
    assert "null" not in text and "resource_selectors" not in text and "resourceSelectors" in text
    as_json = json.loads(dump([policy, cluster], "json"))
    assert as_json["kind"] == "List" and len(as_json["items"]) == 2
    assert json.loads(dump([policy], "json"))["kind"] == "PropagationPolicy"
    assert dump([policy, cluster], "name") == ("propagationpolicy.policy.karmada.io/p\n"
                                               "cluster.cluster.karmada.io/cluster-a\n")
    assert name_of(cluster) == "cluster.cluster.karmada.io/cluster-a"


def test_admit_all_defaults_namespace_and_reports_rule_errors() -> None:
    bad = POLICY.replace("metadata:\n  name: p", "metadata:\n  name: q") + (
        "  placement:\n    replicaScheduling:\n      replicaDivisionPreference: Balanced\n")
    result = admit_all(decode_text(f"{POLICY}---\n{bad}---\n{CLUSTER}"), namespace="team-a")
    policy = result.objects[0].obj
    assert isinstance(policy, PropagationPolicy)
    assert policy.metadata.namespace == "team-a"
    assert policy.spec.resource_selectors[0].namespace == "team-a"
    assert result.objects[1].obj.metadata.namespace is None  # Cluster is cluster-scoped
    [error] = result.errors
    assert error.paths == ["spec.placement.replicaScheduling.replicaDivisionPreference"]
    assert error.line_of(error.paths[0]) == bad.splitlines().index("      replicaDivisionPreference: Balanced") + 1 + len(POLICY.splitlines()) + 1


_SUFFIX = st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "E-2"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), _SUFFIX), min_size=1, max_size=4))
def test_quantities_round_trip(values: list[tuple[int, str]]) -> None:
    free = {f"example.com/r{i}": f"{n}{suffix}" for i, (n, suffix) in enumerate(values)}
    doc = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "c"},
           "status": {"nodeShapes": [{"count": 1, "free": free}]}}
    first = decode_one(yaml.safe_dump(doc))
    again = decode_one(dump([first], "yaml"))
    assert again == first
    assert again.to_wire()["status"]["nodeShapes"][0]["free"] == free


def test_list_items_have_their_own_origin_and_lines() -> None:
    policy = yaml.safe_load(POLICY)
    bad = dict(policy, metadata={"name": "bad"}, spec={"resourceSelectors": [{"kind": "Job"}]})
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [policy, bad]}, sort_keys=False)
    result = decode_text(text, "list.yaml")
    assert [d.origin.item for d in result.objects] == [0]
    [error] = result.errors
    assert error.origin.item == 1 and "(document 1, item 1)" in error.describe()
    assert error.paths == ["spec.resourceSelectors[0].apiVersion"]
    kind_line = next(n for n, line in enumerate(text.splitlines(), 1) if line.strip() == "- kind: Job")
    assert error.line_of("spec.resourceSelectors[0].apiVersion") == kind_line
    array = decode_text(json.dumps([policy, bad], indent=1), "a.json")
    assert [e.origin.item for e in array.errors] == [1]
    assert array.errors[0].line_of("spec.resourceSelectors[0].apiVersion") is not None


def test_decode_object_from_a_parsed_manifest() -> None:
    from policies.codec import decode_object

    obj = decode_object(yaml.safe_load(CLUSTER))
    assert isinstance(obj, Cluster) and obj.name == "cluster-a"
    with pytest.raises(ValidationFailed) as info:
        decode_object(dict(yaml.safe_load(POLICY), spec={}))
    assert info.value.paths == ["spec.resourceSelectors"]
    with pytest.raises(NotACalderaKind):
        decode_object({"apiVersion": "apps/v1", "kind": "Deployment"})
    with pytest.raises(NotAnObject):
        decode_object(["not", "a", "mapping"])


def test_simulated_cluster_files_are_skipped_not_failed() -> None:
    result = decode_text("name: cluster-a\npools:\n- name: a100\n  count: 8\n", "sim.yaml")
    assert result.ok and not result.objects
    [warning] = result.warnings
    assert "simulated-cluster file" in str(warning.error)


def test_merge_keys_may_be_overridden_but_keys_not_repeated() -> None:
    text = ("apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: c}\n"
            "status:\n  resourceSummary:\n    allocatable: &base {cpu: '8', memory: 8Gi}\n"
            "    allocated:\n      <<: *base\n      cpu: '2'\n")
    obj = decode_one(text)
    assert isinstance(obj, Cluster) and obj.status is not None and obj.status.resource_summary is not None
    assert obj.status.resource_summary.allocated == {"cpu": "2", "memory": "8Gi"}
    [error] = decode_text(text.replace("      cpu: '2'\n", "      cpu: '2'\n      cpu: '3'\n")).errors
    assert "duplicate key 'cpu' (first at line 9)" in str(error.error)
    assert error.origin.line == 10
