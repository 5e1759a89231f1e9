"""Placing an accepted Job with the pure placement core (the federation's controllers are off
in the fuzzing server): whatever admission lets in must place or fail cleanly, never raise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from federation.placement.adapters import build_request
from federation.placement.place import Placer, place
from policies.errors import CalderaError

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = [d for d in yaml.safe_load_all((ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml").read_text())
            if isinstance(d, dict)]
POLICY = next(d for d in yaml.safe_load_all(
    (ROOT / "examples" / "seed" / "propagationpolicy-volcano-job-policy.yaml").read_text()) if isinstance(d, dict))


class PurePlacer:
    def __init__(self) -> None:
        self.placer = Placer()

    def __call__(self, job: dict[str, Any]) -> str | None:
        """None when the job placed or failed with a clean reason; else what went wrong."""
        try:
            request = build_request(job, POLICY, CLUSTERS, now=0.0)
        except CalderaError:
            return None  # a clean refusal naming the input
        except Exception as err:  # noqa: BLE001 - the finding is the point
            return f"build_request raised {type(err).__name__}: {err}"
        try:
            decision = place(request, self.placer)
        except Exception as err:  # noqa: BLE001
            return f"place raised {type(err).__name__}: {err}"
        return None if decision.ok or decision.failure is not None else "neither placed nor a failure"
