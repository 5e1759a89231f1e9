"""policies.k8s.tolerations against its one table of cases (tolerations.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s.tolerations import Taint, Toleration, untolerated, validate

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load((Path(__file__).parent / "tolerations.yaml").read_text())


@pytest.mark.parametrize("case", CASES["tolerates"], ids=[c["name"] for c in CASES["tolerates"]])
def test_toleration_case(case: dict[str, Any]) -> None:
    toleration, taint = Toleration.from_wire(case["tol"]), Taint.from_wire(case["taint"])
    assert toleration.tolerates(taint) is case["expect"]
    hard = taint.effect in ("NoSchedule", "NoExecute")
    assert untolerated([taint], (toleration,)) == ([] if case["expect"] or not hard else [taint])


@pytest.mark.parametrize("case", CASES["validate"], ids=[c["name"] for c in CASES["validate"]])
def test_toleration_validation(case: dict[str, Any]) -> None:
    errors = validate(case["tol"], "tolerations[0]")
    assert [e.path for e in errors] == [f"tolerations[0].{field}" for field in case["errors"]]
