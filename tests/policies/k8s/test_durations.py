"""policies.k8s.durations against its one table of cases (durations.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s import durations as d

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load((Path(__file__).parent / "durations.yaml").read_text())


@pytest.mark.parametrize("case", CASES["parse"], ids=[repr(c["text"]) for c in CASES["parse"]])
def test_parse(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(d.InvalidDuration, match=case["error"]):
            d.parse_nanoseconds(case["text"])
        return
    assert d.parse_nanoseconds(case["text"]) == case["ns"]
    assert d.parse_seconds(case["text"]) == case["ns"] / 1e9


@pytest.mark.parametrize("case", CASES["format"], ids=[c["text"] for c in CASES["format"]])
def test_format_and_round_trip(case: dict[str, Any]) -> None:
    assert d.format_nanoseconds(case["ns"]) == case["text"]
    assert d.parse_nanoseconds(case["text"]) == case["ns"]


@pytest.mark.parametrize("case", CASES["flag"], ids=[c["text"] for c in CASES["flag"]])
def test_flag_values(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(d.InvalidDuration, match=case["error"]):
            d.parse_flag_seconds(case["text"])
        return
    assert d.parse_flag_seconds(case["text"]) == case["seconds"]


def test_format_seconds_rounds_to_the_nanosecond() -> None:
    assert d.format_seconds(5400.0) == "1h30m0s"
    assert d.format_seconds(0.25) == "250ms"
