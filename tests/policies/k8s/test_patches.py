"""policies.k8s.patches against its one table of cases (patches.yaml)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s.patches import PatchError, json_patch, merge_diff, merge_patch

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load((Path(__file__).parent / "patches.yaml").read_text())


@pytest.mark.parametrize("case", CASES["merge"], ids=[c["name"] for c in CASES["merge"]])
def test_merge_patch(case: dict[str, Any]) -> None:
    target = copy.deepcopy(case["target"])
    assert merge_patch(target, case["patch"]) == case["result"]
    assert target == case["target"]  # not changed in place
    diff = merge_diff(case["target"], case["result"])
    assert merge_patch(case["target"], diff) == case["result"]


@pytest.mark.parametrize("case", CASES["json"], ids=[c["name"] for c in CASES["json"]])
def test_json_patch(case: dict[str, Any]) -> None:
    doc = copy.deepcopy(case["doc"])
    if "error" in case:
        with pytest.raises(PatchError) as caught:
            json_patch(doc, case["ops"])
        assert caught.value.status == case["error"]
    else:
        assert json_patch(doc, case["ops"]) == case["result"]
    assert doc == case["doc"]


def test_merge_diff_of_equal_values_is_empty() -> None:
    assert merge_diff({"a": {"b": [1]}}, {"a": {"b": [1]}}) == {}
