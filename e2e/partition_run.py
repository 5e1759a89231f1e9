"""Partition scenarios with real processes, shared by ``e2e/test_partition.py`` and ``bench/chaos.py``.

One ``caldera serve``, cluster-a's agent beside it, cluster-b's agent in a network namespace of its
own (:class:`e2e.netns.Partition`), every agent sampled every 0.25 s. A gang spanning both clusters
(the seed's pytorch-dist-training under the 1:2 policy) runs; then, at a chosen moment, cluster-b
is cut off (veth down) or its agent killed with SIGKILL; the federation must re-place the gang on
cluster-a; then the link heals (or the agent restarts). The samples are checked with
:mod:`e2e.partition_samples`: no two generations of the job ever run at once, and no generation
runs by halves longer than lease grace + pod termination grace + 5 s.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e import netns
from e2e.harness import (
    AGENT_ARGS,
    CLUSTER,
    JOB,
    SPEED,
    WATCHED,
    api,
    apply,
    capacity_reported,
    named,
    seed_clusters,
    seed_one,
    shares,
    until,
    works_of,
)
from e2e.partition_samples import Findings, analyse, load
from federation.demo.processes import AGENT_LISTENING, System


@dataclass(frozen=True)
class Settings:
    """The graces a scenario runs with (the federation's flags and the agents' renew period)."""

    lease_grace: float
    failover_grace: float
    termination_grace: float
    serve_args: tuple[str, ...]
    lease_period: float = 2.0

    @property
    def halves_bound(self) -> float:
        """The bound on running by halves the issue sets: lease grace + termination grace + 5 s."""
        return self.lease_grace + self.termination_grace + 5.0


#: the issue's short graces (what CI runs)
SHORT = Settings(10.0, 10.0, 3.0, ("--cluster-lease-grace", "10", "--cluster-failover-grace", "10",
                                   "--pod-termination-grace", "3", "--cluster-monitor-period", "1",
                                   "--cluster-success-threshold", "2"))
#: every flag at its default (lease 40 s, failover 300 s, 30 s pods, agents renewing every 10 s)
DEFAULTS = Settings(40.0, 300.0, 30.0, (), lease_period=10.0)
HALVES_BOUND = SHORT.halves_bound
SERVE_ARGS = SHORT.serve_args


@dataclass(frozen=True)
class Scenario:
    name: str
    #: "running": when every share runs; "reserved": when cluster-b's share reports Reserved
    when: str
    #: "cut": take the veth pair down; "kill": SIGKILL cluster-b's agent
    action: str
    #: how long the partition lasts after the gang was re-placed and runs on cluster-a
    hold_after: float = 2.0
    job_seconds: int = 3000


@dataclass
class Outcome:
    scenario: Scenario
    findings: Findings
    generations: tuple[int, int]
    timeline: list[tuple[float, str]]
    #: cluster -> the Cluster's status.fence before the partition
    fences: dict[str, Any]
    #: the Job's "runs by halves" condition messages seen during the partition
    by_halves: list[str]


async def _gang_phase(rc: Any, job: str, cluster: str, phases: set[str]) -> Any:
    for work in await works_of(rc, job):
        if work["metadata"]["namespace"] == f"karmada-es-{cluster}":
            gang = (work.get("status") or {}).get("gang") or {}
            if gang.get("phase") in phases and gang.get("generation") == work["spec"]["placement"]["generation"]:
                return work
    return None


async def run(tmp: Path, scenario: Scenario, settings: Settings = SHORT) -> Outcome:
    """Run one scenario end to end; everything it started is gone when it returns or raises."""
    system = System(tmp / "system", seed_clusters(), speed=SPEED, serve_args=list(settings.serve_args),
                    agent_args=[*AGENT_ARGS, "--lease-period", f"{settings.lease_period:g}"])
    patience = 90 + 2 * settings.halves_bound
    samples = tmp / "samples"
    samples.mkdir(parents=True, exist_ok=True)
    partition = netns.Partition(system, "cluster-b", samples / "cluster-b.jsonl")
    side = None
    timeline: list[tuple[float, str]] = []
    halves: list[str] = []  # the Job's GangStarted=False/RunningByHalves messages seen while waiting
    began = time.monotonic()

    def mark(what: str) -> None:
        timeline.append((round(time.monotonic() - began, 1), what))

    WATCHED.append(system)
    try:
        system.start_federation()
        url = system.start_agent("cluster-a").wait_for(AGENT_LISTENING, system.startup_timeout).group(1)
        side = netns.sampler(samples / "cluster-a.jsonl", f"{url}/status")
        partition.open()
        partition.start_agent()
        job = named(seed_one("job-pytorch-dist-training.yaml"), f"chaos-{scenario.name}", seconds=scenario.job_seconds)
        name = job["metadata"]["name"]
        async with api(system) as rc:
            await capacity_reported(rc, system)

            async def fences_checked() -> Any:
                found = {}
                for name in ("cluster-a", "cluster-b"):
                    status = (await rc.get(CLUSTER, name)).get("status") or {}
                    fence, timing = status.get("fence") or {}, status.get("failoverTiming") or {}
                    if fence.get("basis") != "federation" or (timing.get("fenceCheck") or {}).get("result") != "Safe":
                        return None
                    found[name] = fence
                return found

            fences = await until(fences_checked, 60, "both agents' fences derived from the federation and Safe")
            await apply(rc, seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"),
                        job)
            wanted = {"Running"} if scenario.when == "running" else {"Reserved", "Released", "Running"}
            await until(lambda: _gang_phase(rc, name, "cluster-b", wanted), 90, f"cluster-b's share {wanted}")
            if scenario.when == "running":
                await until(lambda: _gang_phase(rc, name, "cluster-a", {"Running"}), 60, "cluster-a's share Running")
            first = max(s.generation for s in (await shares(rc, name)).values())
            mark(f"generation {first} {scenario.when}: {scenario.action} cluster-b")
            if scenario.action == "cut":
                partition.cut()
            else:
                system.agents["cluster-b"].kill()

            async def replaced() -> Any:
                conditions = ((await rc.get(JOB, name, "default")).get("status") or {}).get("conditions") or []
                halves.extend(c.get("message", "") for c in conditions
                              if c.get("type") == "GangStarted" and c.get("reason") == "RunningByHalves")
                now = await shares(rc, name)
                ok = set(now) == {"cluster-a"} and now["cluster-a"].generation > first and now["cluster-a"].running
                return now if ok else None

            after = await until(replaced, patience, "the gang re-placed on cluster-a and running")
            second = after["cluster-a"].generation
            mark(f"generation {second} runs on cluster-a")
            await asyncio.sleep(scenario.hold_after)  # the partition goes on; the samplers keep watching
            if scenario.action == "cut":
                partition.heal()
            else:
                partition.start_agent()
            mark("healed")

            async def cluster_b_ready() -> Any:
                cluster = await rc.get(CLUSTER, "cluster-b")
                ready = [c for c in (cluster.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
                return cluster if ready and ready[0].get("status") == "True" else None

            await until(cluster_b_ready, patience, "cluster-b Ready again after the heal")
            mark("cluster-b Ready")
            await asyncio.sleep(2.0)  # a few more samples after the heal: nothing comes back to life
    finally:
        if side is not None:
            netns.stop(side)
        partition.close()
        if system in WATCHED:
            WATCHED.remove(system)
        system.stop()
    found = analyse(load(sorted(samples.glob("*.jsonl"))))
    return Outcome(scenario, found, (first, second), timeline, fences, sorted(set(halves)))
