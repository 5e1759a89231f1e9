"""policies.k8s.tolerations against its one table of cases (tolerations.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.k8s.tolerations import Taint, Toleration, untolerated

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "tolerations.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_toleration_case(case: dict[str, Any]) -> None:
    toleration, taint = Toleration.from_wire(case["tol"]), Taint.from_wire(case["taint"])
    assert toleration.tolerates(taint) is case["expect"]
    hard = taint.effect in ("NoSchedule", "NoExecute")
    assert untolerated([taint], (toleration,)) == ([] if case["expect"] or not hard else [taint])
