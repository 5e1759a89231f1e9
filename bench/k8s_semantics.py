"""How fast the shared Kubernetes semantics in ``policies/k8s`` answer (issue 39).

Times the calls the hot callers make: a wire label selector parsed and matched (PropagationPolicy
matching parses per policy and job), a parsed one matched (placement, pod affinity), a node
selector term over node labels (capacity estimator), a toleration check, a Go duration parsed.

    python bench/k8s_semantics.py              # 200,000 calls each
    python bench/k8s_semantics.py --calls 50000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies.k8s import durations, label_selector, node_selector  # noqa: E402
from policies.k8s.tolerations import Taint, Toleration  # noqa: E402

SELECTOR = {"matchLabels": {"team": "a"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]},
                                 {"key": "retired", "operator": "DoesNotExist"}]}
LABELS = {"team": "a", "zone": "z2", "gpu": "a100"}
TERM = node_selector.term({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["48"]},
                                                {"key": "zone", "operator": "In", "values": ["z1", "z2"]}]})
NODE_LABELS = {"cores": "64", "zone": "z1"}
TOLERATION, TAINT = Toleration("gpu", "Exists", effect="NoSchedule"), Taint("gpu", "true", "NoSchedule")


def rate(call: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    parsed = label_selector.parse(SELECTOR)
    assert parsed is not None
    cases: list[tuple[str, Callable[[], object]]] = [
        ("label selector, wire: parse + match", lambda: label_selector.selects(SELECTOR, LABELS)),
        ("label selector, parsed: match", lambda: parsed.matches(LABELS)),
        ("node selector term (Gt + In): match", lambda: TERM.matches(NODE_LABELS, "n1")),
        ("toleration: tolerates", lambda: TOLERATION.tolerates(TAINT)),
        ("Go duration '1h30m15.5s': parse", lambda: durations.parse_nanoseconds("1h30m15.5s")),
    ]
    for name, call in cases:
        print(f"{name:40s} {rate(call, args.calls):>12,.0f} calls/s")


if __name__ == "__main__":
    main()
