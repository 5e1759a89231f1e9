"""policies.k8s.node_selector against its one table of cases (node_selector.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s import node_selector as ns

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "node_selector.yaml").read_text())


def selector(case: dict[str, Any]) -> dict[str, Any] | None:
    return None if case["terms"] is None else {"nodeSelectorTerms": case["terms"]}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_node_selector_case(case: dict[str, Any]) -> None:
    terms = ns.terms(selector(case))
    labels = {str(k): str(v) for k, v in case["labels"].items()}
    assert ns.any_term_matches(terms, labels, case.get("node", "n1")) is case["expect"]


@pytest.mark.parametrize("text, value", [("0", 0), ("-12", -12), ("+7", 7), ("007", 7), ("", None), ("1e3", None),
                                         ("٣", None), ("-9223372036854775808", -(1 << 63)),
                                         ("-9223372036854775809", None)])
def test_parse_int64_is_go_parseint(text: str, value: int | None) -> None:
    assert ns.parse_int64(text) == value
