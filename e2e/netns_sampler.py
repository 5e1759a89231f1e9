"""Samples one agent's ``/status`` for the partition tests: ``python -m e2e.netns_sampler URL OUT PERIOD``.

Runs beside the agent (inside its network namespace for the cut-off one, so its pods are seen
while the partition lasts) and appends one JSON line per sample: the wall time, whether the agent
answered, and per Work the running pods by placement generation (:mod:`e2e.partition_samples`).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request


def sample(url: str) -> dict[str, object]:
    try:
        with urllib.request.urlopen(url, timeout=0.4) as answer:
            doc = json.load(answer)
    except (OSError, ValueError):
        return {"t": time.time(), "ok": False}
    works = {}
    for key, work in (doc.get("works") or {}).items():
        works[key.split("/", 1)[-1]] = {"generation": work.get("generation"), "clusters": work.get("clusters"),
                                        "running": work.get("runningByGeneration") or {},
                                        "fenced": work.get("fenced")}
    return {"t": time.time(), "ok": True, "cluster": doc.get("cluster"), "works": works,
            "unreachableFor": (doc.get("fence") or {}).get("unreachableForSeconds")}


def main(url: str, out: str, period: float) -> None:
    with open(out, "a", encoding="utf-8") as handle:
        while True:
            began = time.monotonic()
            handle.write(json.dumps(sample(url)) + "\n")
            handle.flush()
            time.sleep(max(0.0, period - (time.monotonic() - began)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
