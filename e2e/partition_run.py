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
import contextlib
import json
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
#: what e2e/test_partition.py runs: the issue's graces with 1 s pods (the next generation waits
#: T + 5 s for the cut-off share to be gone: 2 s less per scenario than with 3 s pods)
CI = Settings(10.0, 10.0, 1.0, ("--cluster-lease-grace", "10", "--cluster-failover-grace", "10",
                                "--pod-termination-grace", "1", "--cluster-monitor-period", "1",
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
    #: how long the partition lasts after the gang was re-placed and runs on cluster-a (the test
    #: heals at once: what it proves needs no longer partition; bench/chaos.py --hold)
    hold_after: float = 0.0
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


@dataclass
class Played:
    """One scenario played in a :class:`Lab`: the job, its two generations, what was seen."""

    scenario: Scenario
    job: str
    generations: tuple[int, int]
    by_halves: list[str]


async def _gang_phase(rc: Any, job: str, cluster: str, phases: set[str]) -> Any:
    for work in await works_of(rc, job):
        if work["metadata"]["namespace"] == f"karmada-es-{cluster}":
            gang = (work.get("status") or {}).get("gang") or {}
            if gang.get("phase") in phases and gang.get("generation") == work["spec"]["placement"]["generation"]:
                return work
    return None


def _last_sample(path: Path, after: float) -> Any:
    """The newest sample in ``path`` taken after wall time ``after`` (None: none yet)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines[-20:]):
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            return row if row.get("t", 0) > after else None
    return None


class Lab:
    """One ``caldera serve``, cluster-a's agent, cluster-b's agent in a network namespace, both
    sampled; scenarios are played in turn on the same processes (:meth:`play`), each with a Job of
    its own that is deleted (and gone from both agents) before the next one starts."""

    def __init__(self, tmp: Path, settings: Settings = SHORT) -> None:
        self.settings = settings
        self.system = System(tmp / "system", seed_clusters(), speed=SPEED, serve_args=list(settings.serve_args),
                             agent_args=[*AGENT_ARGS, "--lease-period", f"{settings.lease_period:g}"])
        self.patience = 90 + 2 * settings.halves_bound
        self.samples = tmp / "samples"
        self.samples.mkdir(parents=True, exist_ok=True)
        self.partition = netns.Partition(self.system, "cluster-b", self.samples / "cluster-b.jsonl")
        self.side: Any = None
        self.timeline: list[tuple[float, str]] = []
        self.fences: dict[str, Any] = {}
        self.began = time.monotonic()
        self._api: Any = None
        self.rc: Any = None

    def mark(self, what: str) -> None:
        self.timeline.append((round(time.monotonic() - self.began, 1), what))

    async def __aenter__(self) -> "Lab":
        WATCHED.append(self.system)
        try:
            await self._start()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _start(self) -> None:
        system = self.system
        system.start_federation()
        url = system.start_agent("cluster-a").wait_for(AGENT_LISTENING, system.startup_timeout).group(1)
        self.side = netns.sampler(self.samples / "cluster-a.jsonl", f"{url}/status")
        self.mark("federation and cluster-a's agent up")
        self.partition.open()
        self.partition.start_agent()
        self.mark("cluster-b's agent up in its namespace")
        self._api = api(system)
        self.rc = rc = await self._api.__aenter__()
        await capacity_reported(rc, system)
        self.mark("capacity reported")

        async def fences_checked() -> Any:
            found = {}
            for name in ("cluster-a", "cluster-b"):
                status = (await rc.get(CLUSTER, name)).get("status") or {}
                fence, timing = status.get("fence") or {}, status.get("failoverTiming") or {}
                if fence.get("basis") != "federation" or (timing.get("fenceCheck") or {}).get("result") != "Safe":
                    return None
                found[name] = fence
            return found

        self.fences = await until(fences_checked, 60, "both agents' fences derived from the federation and Safe")
        await apply(rc, seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"))
        self.mark("system up, fences Safe")

    async def __aexit__(self, *exc: object) -> None:
        if self._api is not None:
            await self._api.__aexit__(None, None, None)
            self._api = None
        if self.side is not None:
            netns.stop(self.side)
            self.side = None
        self.partition.close()
        if self.system in WATCHED:
            WATCHED.remove(self.system)
        self.system.stop()

    def findings(self) -> Findings:
        return analyse(load(sorted(self.samples.glob("*.jsonl"))))

    async def play(self, scenario: Scenario) -> Played:
        """Run the gang, cut cluster-b off (or kill its agent) at the scenario's moment, wait for the
        re-placement on cluster-a, heal, and wait until cluster-b's agent no longer has the job."""
        rc, halves = self.rc, []
        job = named(seed_one("job-pytorch-dist-training.yaml"), f"chaos-{scenario.name}", seconds=scenario.job_seconds)
        name = job["metadata"]["name"]
        await apply(rc, job)
        wanted = {"Running"} if scenario.when == "running" else {"Reserved", "Released", "Running"}
        await until(lambda: _gang_phase(rc, name, "cluster-b", wanted), 90, f"cluster-b's share {wanted}")
        if scenario.when == "running":
            await until(lambda: _gang_phase(rc, name, "cluster-a", {"Running"}), 60, "cluster-a's share Running")
        first = max(s.generation for s in (await shares(rc, name)).values())
        self.mark(f"{name}: generation {first} {scenario.when}: {scenario.action} cluster-b")
        if scenario.action == "cut":
            self.partition.cut()
        else:
            self.system.agents["cluster-b"].kill()

        async def replaced() -> Any:
            conditions = ((await rc.get(JOB, name, "default")).get("status") or {}).get("conditions") or []
            halves.extend(c.get("message", "") for c in conditions
                          if c.get("type") == "GangStarted" and c.get("reason") == "RunningByHalves")
            now = await shares(rc, name)
            ok = set(now) == {"cluster-a"} and now["cluster-a"].generation > first and now["cluster-a"].running
            return now if ok else None

        after = await until(replaced, self.patience, "the gang re-placed on cluster-a and running")
        second = after["cluster-a"].generation
        self.mark(f"{name}: generation {second} runs on cluster-a")
        if scenario.hold_after > 0:
            await asyncio.sleep(scenario.hold_after)  # bench: a longer partition; the samplers keep watching
        healed = time.time()
        if scenario.action == "cut":
            self.partition.heal()
        else:
            self.partition.start_agent()
        self.mark(f"{name}: healed")
        await until(lambda: self._left(rc, "cluster-b", name, healed), self.patience,
                    "cluster-b Ready again and its agent rid of the re-placed job's old generation")
        self.mark(f"{name}: cluster-b Ready, nothing of generation {first} there")
        return Played(scenario, f"default.{name}", (first, second), sorted(set(halves)))

    async def _left(self, rc: Any, cluster: str, name: str, since: float) -> Any:
        """Whether ``cluster`` is Ready and untainted and a sample its agent answered after ``since`` shows no Work
        of the job (the federation withdrew it there; the agent saw it go, and its pods with it)."""
        obj = await rc.get(CLUSTER, cluster)
        ready = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        sample = _last_sample(self.samples / f"{cluster}.jsonl", since)
        gone = sample is not None and sample.get("ok") and f"default.{name}" not in (sample.get("works") or {})
        # the taints go in a write after Ready: a Job placed between the two would skip the cluster
        untainted = not (obj.get("spec") or {}).get("taints")
        return bool(ready and ready[0].get("status") == "True" and untainted and gone)

    async def remove(self, played: Played) -> None:
        """Delete the scenario's Job and wait until no agent has it (its GPUs free for the next one)."""
        name = played.job.split(".", 1)[1]
        await self.rc.delete(JOB, name, "default")
        deleted = time.time()

        async def nowhere() -> Any:
            samples = [_last_sample(self.samples / f"{c}.jsonl", deleted) for c in ("cluster-a", "cluster-b")]
            return all(s is not None and s.get("ok") and played.job not in (s.get("works") or {}) for s in samples)

        await until(nowhere, 60, f"{played.job} gone from both agents")
        self.mark(f"{name}: deleted")


async def run(tmp: Path, scenario: Scenario, settings: Settings = SHORT) -> Outcome:
    """Run one scenario end to end in a :class:`Lab` of its own (``bench/chaos.py``); everything it
    started is gone when it returns or raises."""
    async with Lab(tmp, settings) as lab:
        played = await lab.play(scenario)
    return Outcome(scenario, lab.findings(), played.generations, lab.timeline, lab.fences, played.by_halves)
