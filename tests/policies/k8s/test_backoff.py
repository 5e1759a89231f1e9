"""policies.backoff against its one table of cases (backoff.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.backoff import Backoff, backoff

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "backoff.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_backoff_case(case: dict[str, Any]) -> None:
    got = Backoff(case["base"], case["cap"]).delay(case["failures"])
    assert got == pytest.approx(case["expect"], rel=1e-12)
    assert backoff(case["failures"], case["base"], case["cap"]) == got


def test_delays_never_decrease_and_stay_under_the_cap() -> None:
    policy = Backoff(0.2, 10.0)
    delays = [policy.delay(n) for n in range(0, 3000)]
    assert delays == sorted(delays)
    assert max(delays) == 10.0


@pytest.mark.parametrize("base, cap", [(-1, 10), (1, float("inf")), (float("nan"), 1), ("1", 2)])
def test_bad_settings_are_refused_naming_the_field(base: Any, cap: Any) -> None:
    with pytest.raises(ValueError, match="backoff (base|cap) must be a finite number"):
        Backoff(base, cap)
