"""HyperNode admission (Volcano's webhook rules): every rule refused by a bad manifest, naming
the field path and the rule; a good manifest passes unchanged."""

from __future__ import annotations

import copy

import pytest

from policies.admission import admit
from policies.codec import decode_object
from policies.errors import ValidationFailed

GOOD = {
    "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
    "metadata": {"name": "leaf0"},
    "spec": {"tier": 1, "tierName": "leaf", "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}},
        {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[1-3]$"}}},
        {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"switch": "s0"},
                                                     "matchExpressions": [{"key": "rack", "operator": "Exists"}]}}},
    ]},
}


def member(selector: dict, type_: str | None = "Node") -> dict:
    out: dict = {"selector": selector}
    if type_ is not None:
        out["type"] = type_
    return out


# (case, spec change, field path in the error, words of the rule)
BAD = [
    ("no members", {"members": []}, "spec.members", "at least one member"),
    ("members missing", {"members": None}, "spec.members", "at least one member"),
    ("tier missing", {"tier": None}, "spec.tier", "required"),
    ("tier negative", {"tier": -1}, "spec.tier", "must be >= 0"),
    ("member without type", {"members": [member({"exactMatch": {"name": "n"}}, None)]},
     "spec.members[0].type", "Node or HyperNode"),
    ("member without selector", {"members": [{"type": "Node"}]}, "spec.members[0].selector", "exactly one"),
    ("empty selector", {"members": [member({})]}, "spec.members[0].selector", "found none"),
    ("two selectors", {"members": [member({"exactMatch": {"name": "n"}, "regexMatch": {"pattern": "n"}})]},
     "spec.members[0].selector", "found exactMatch, regexMatch"),
    ("three selectors", {"members": [member({"exactMatch": {"name": "n"}, "regexMatch": {"pattern": "n"},
                                             "labelMatch": {"matchLabels": {"a": "b"}}})]},
     "spec.members[0].selector", "exactly one"),
    ("exactMatch empty name", {"members": [member({"exactMatch": {"name": ""}})]},
     "spec.members[0].selector.exactMatch.name", "required"),
    ("exactMatch bad name", {"members": [member({"exactMatch": {"name": "bad name!"}})]},
     "spec.members[0].selector.exactMatch.name", "alphanumeric"),
    ("regexMatch empty", {"members": [member({"regexMatch": {"pattern": ""}})]},
     "spec.members[0].selector.regexMatch.pattern", "required"),
    ("regexMatch does not compile", {"members": [member({"regexMatch": {"pattern": "node-(["}})]},
     "spec.members[0].selector.regexMatch.pattern", "invalid regular expression"),
    ("labelMatch selects nothing", {"members": [member({"labelMatch": {}})]},
     "spec.members[0].selector.labelMatch", "matchLabels or matchExpressions"),
    ("labelMatch bad operator", {"members": [member({"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "Equals", "values": ["a"]}]}})]},
     "spec.members[0].selector.labelMatch.matchExpressions[0].operator", "must be one of"),
    ("labelMatch In without values", {"members": [member({"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "In"}]}})]},
     "spec.members[0].selector.labelMatch.matchExpressions[0].values", "at least one value"),
    ("labelMatch Exists with values", {"members": [member({"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "Exists", "values": ["a"]}]}})]},
     "spec.members[0].selector.labelMatch.matchExpressions[0].values", "must be empty"),
    ("labelMatch bad key", {"members": [member({"labelMatch": {"matchLabels": {"bad key!": "v"}}})]},
     "spec.members[0].selector.labelMatch.matchLabels", "invalid label key"),
]


def test_good_manifest_is_admitted_unchanged() -> None:
    obj = admit(decode_object(copy.deepcopy(GOOD)))
    assert obj.to_wire()["spec"] == GOOD["spec"]


@pytest.mark.parametrize(("case", "change", "path", "words"), BAD, ids=[c[0] for c in BAD])
def test_bad_manifest_is_refused_naming_field_and_rule(case: str, change: dict, path: str, words: str) -> None:
    doc = copy.deepcopy(GOOD)
    for key, value in change.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    with pytest.raises(ValidationFailed) as caught:
        admit(decode_object(doc))
    errors = [(e.path, e.message) for e in caught.value.errors]
    assert any(p == path and words in m for p, m in errors), errors


def test_bad_name_is_refused() -> None:
    doc = copy.deepcopy(GOOD)
    doc["metadata"]["name"] = "Leaf_0"
    with pytest.raises(ValidationFailed) as caught:
        admit(decode_object(doc))
    assert any(e.path == "metadata.name" for e in caught.value.errors)


def test_unknown_member_type_is_refused_by_the_schema() -> None:
    doc = copy.deepcopy(GOOD)
    doc["spec"]["members"][0]["type"] = "Switch"
    with pytest.raises(Exception) as caught:
        admit(decode_object(doc))
    assert "members" in str(caught.value) and "type" in str(caught.value)
