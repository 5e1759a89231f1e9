"""The two fencing guarantees, checked on the agents' sampled ``/status`` (pure; no I/O but :func:`load`).

Each sample (:mod:`e2e.netns_sampler`) says, per Work, how many pods run per placement generation.
A cluster's state holds from one of its samples to the next; an agent that does not answer runs
nothing (a killed ``--sim`` agent's pods die with it). Over the merged timeline:

* **never twice**: at no instant do pods of two placement generations of one Job run (the old
  generation on a cut-off cluster beside the re-placed one is exactly the split brain);
* **never by halves for long**: a generation spanning ``clusters`` shares runs by halves while some
  but not all of its shares run pods; the longest such stretch per (Job, generation) is reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Sample = Mapping[str, Any]


@dataclass
class Findings:
    samples: int = 0
    #: largest gap between two consecutive samples of one cluster (the sampling resolution)
    max_gap: float = 0.0
    #: (time, job, {generation: [clusters]}) where two generations ran at once
    double_runs: list[tuple[float, str, dict[str, list[str]]]] = field(default_factory=list)
    #: (job, generation) -> longest stretch in seconds with some shares running and others not
    halves: dict[tuple[str, str], float] = field(default_factory=dict)
    #: (job, generation) -> clusters that ran it
    ran: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def longest_halves(self) -> float:
        return max(self.halves.values(), default=0.0)


def load(paths: Iterable[Path]) -> dict[str, list[dict[str, Any]]]:
    """cluster -> its samples in time order (a file per sampled agent; the cluster is the file's stem)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out[path.stem] = sorted(rows, key=lambda r: r["t"])
    return out


def _running(sample: Sample | None) -> dict[str, dict[str, int]]:
    """job -> generation -> running pods in one sample."""
    if not sample or not sample.get("ok"):
        return {}
    out: dict[str, dict[str, int]] = {}
    for job, work in (sample.get("works") or {}).items():
        gens = {str(g): int(n) for g, n in (work.get("running") or {}).items() if int(n) > 0}
        if gens:
            out[job] = gens
    return out


def _share_counts(by_cluster: Mapping[str, list[dict[str, Any]]]) -> dict[tuple[str, str], int]:
    """(job, generation) -> how many clusters share it (the Works' ``spec.placement.clusters``)."""
    out: dict[tuple[str, str], int] = {}
    for samples in by_cluster.values():
        for sample in samples:
            for job, work in (sample.get("works") or {}).items():
                if work.get("generation") is not None:
                    key = (job, str(work["generation"]))
                    out[key] = max(out.get(key, 1), int(work.get("clusters") or 1))
    return out


def analyse(by_cluster: Mapping[str, list[dict[str, Any]]]) -> Findings:
    found = Findings(samples=sum(len(s) for s in by_cluster.values()))
    for samples in by_cluster.values():
        for before, after in zip(samples, samples[1:], strict=False):
            found.max_gap = max(found.max_gap, after["t"] - before["t"])
    shares = _share_counts(by_cluster)
    events = sorted((s["t"], cluster, s) for cluster, rows in by_cluster.items() for s in rows)
    state: dict[str, dict[str, dict[str, int]]] = {}
    started: dict[tuple[str, str], float] = {}
    for t, cluster, sample in events:
        state[cluster] = _running(sample)
        per_job: dict[str, dict[str, list[str]]] = {}
        for name, jobs in state.items():
            for job, gens in jobs.items():
                for gen in gens:
                    per_job.setdefault(job, {}).setdefault(gen, []).append(name)
                    found.ran.setdefault((job, gen), set()).add(name)
        for job, gens in per_job.items():
            if len(gens) > 1:
                found.double_runs.append((t, job, {g: sorted(c) for g, c in gens.items()}))
        halves_now = {(job, gen) for job, gens in per_job.items() for gen, names in gens.items()
                      if 0 < len(names) < shares.get((job, gen), 1)}
        for key in list(started):
            if key not in halves_now:
                found.halves[key] = max(found.halves.get(key, 0.0), t - started.pop(key))
        for key in halves_now:
            started.setdefault(key, t)
    end = events[-1][0] if events else 0.0
    for key, since in started.items():
        found.halves[key] = max(found.halves.get(key, 0.0), end - since)
    return found


def report(found: Findings) -> str:
    lines = [f"samples {found.samples}, largest gap between one agent's samples {found.max_gap:.2f}s",
             f"two generations of one job running at once: {len(found.double_runs)} sample(s)"]
    for t, job, gens in found.double_runs[:5]:
        lines.append(f"  at {t:.1f}: {job} {gens}")
    for (job, gen), seconds in sorted(found.halves.items()):
        lines.append(f"{job} generation {gen}: ran on {sorted(found.ran.get((job, gen), set()))}, "
                     f"by halves at most {seconds:.1f}s")
    return "\n".join(lines)
