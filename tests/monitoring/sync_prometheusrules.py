"""Write deploy/monitoring/prometheusrule-*.yaml from deploy/prometheus/*.yaml (the Prometheus
Operator's PrometheusRule wraps the same groups). ``python -m tests.monitoring.sync_prometheusrules``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.monitoring.tools import PROMETHEUS_DIR, REPO

MONITORING_DIR = REPO / "deploy" / "monitoring"
HEADER = "# Generated from deploy/prometheus/{name} by python -m tests.monitoring.sync_prometheusrules: edit that file.\n"


def prometheus_rule(source: Path) -> dict[str, Any]:
    groups = yaml.safe_load(source.read_text())["groups"]
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": f"caldera-{source.stem}".replace("caldera-caldera-", "caldera-"),
                         "labels": {"app.kubernetes.io/name": "caldera"}},
            "spec": {"groups": groups}}


def target(source: Path) -> Path:
    return MONITORING_DIR / f"prometheusrule-{source.stem}.yaml"


def render(source: Path) -> str:
    return HEADER.format(name=source.name) + yaml.safe_dump(prometheus_rule(source), sort_keys=False,
                                                            allow_unicode=True, width=200)


def main() -> None:
    for source in sorted(PROMETHEUS_DIR.glob("*.yaml")):
        target(source).write_text(render(source))
        print(f"wrote {target(source)}")


if __name__ == "__main__":
    main()
