"""policies.k8s.label_selector against its one table of cases (label_selector.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s import label_selector as ls

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "label_selector.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_label_selector_case(case: dict[str, Any]) -> None:
    labels = {str(k): str(v) for k, v in case["labels"].items()}
    expect = case["expect"]
    if isinstance(expect, str):
        path = expect.removeprefix("error: ")
        errors = ls.validate(case["selector"], "labelSelector")
        assert [e.path for e in errors] == [path]
        with pytest.raises(ls.InvalidSelector, match=path.replace("[", r"\[").replace("]", r"\]")):
            ls.parse(case["selector"])
        assert ls.selects(case["selector"], labels, nil=True) is False  # invalid: selects nothing
        return
    assert ls.validate(case["selector"], "labelSelector") == []
    assert ls.selects(case["selector"], labels, nil=bool(case.get("nil"))) is expect
    parsed = ls.parse(case["selector"])
    if parsed is not None:
        assert parsed.matches(labels) is expect


def test_hand_built_unknown_operator_matches_nothing() -> None:
    assert ls.Requirement("a", "Bogus", ("x",)).matches({"a": "x"}) is False
    assert ls.Requirement("a", "Bogus").matches({}) is False
