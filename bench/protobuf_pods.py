"""Protobuf against JSON for the Pods and Nodes the API serves: size and encode/decode speed.

    python bench/protobuf_pods.py [--copies 2000]

Encodes a PodList / NodeList of ``--copies`` copies of the realistic objects the protobuf tests use
(a Volcano worker pod with resources, probes, affinity and status; a GPU node) in both forms and
prints bytes per object and objects per second each way. What a typed client's list or watch of
pods costs the server per object.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from federation.apiserver import protobuf  # noqa: E402

OBJECTS = ROOT / "tests" / "apiserver" / "data" / "protobuf" / "workloads.yaml"


def _timed(action: Callable[[Any], Any], argument: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action(argument)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=2000, help="objects in each list")
    args = parser.parse_args()
    for obj in yaml.safe_load(OBJECTS.read_text()):
        kind, n = obj["kind"], args.copies
        item = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        listed = {"apiVersion": "v1", "kind": f"{kind}List", "metadata": {"resourceVersion": "1"}, "items": [item] * n}
        wire = protobuf.encode(listed)
        assert wire is not None, f"{kind} has no protobuf form"
        text = orjson.dumps(listed)
        pb_enc = _timed(protobuf.encode, listed)
        pb_dec = _timed(protobuf.decode, wire)
        js_enc = _timed(orjson.dumps, listed)
        js_dec = _timed(orjson.loads, text)
        print(f"{kind}: protobuf {len(wire) / n:,.0f} B/object, JSON {len(text) / n:,.0f} B/object")
        print(f"  encode: protobuf {n / pb_enc:,.0f}/s, JSON (orjson) {n / js_enc:,.0f}/s")
        print(f"  decode: protobuf {n / pb_dec:,.0f}/s, JSON (orjson) {n / js_dec:,.0f}/s")


if __name__ == "__main__":
    main()
