"""Partition scenarios with real processes, shared by ``e2e/test_partition.py`` and ``bench/chaos.py``.

One ``caldera serve``, cluster-a's agent beside it, cluster-b's agent in a network namespace of its
own (:class:`e2e.netns.Partition`), every agent sampled every 0.25 s. A gang spanning both clusters
(the seed's pytorch-dist-training under the 1:2 policy) runs; then, at a chosen moment, cluster-b
is cut off (veth down) or its agent killed with SIGKILL (several gangs, each at its own moment, may
share one action: :meth:`Lab.play_together`); either the federation re-places the gang on cluster-a
and then the link heals (or the agent restarts), or the agent restarts at once and the gang resumes
or is re-placed; every gang must end running whole under one generation. The samples are checked
with :mod:`e2e.partition_samples`: no two generations of a job ever run at once, and no generation
runs by halves longer than lease grace + pod termination grace + 5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

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
from policies.kinds import resolve
from policies.models.karmada_work import binding_name

BINDING = resolve("resourcebindings")


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
    #: when the link heals (or the killed agent restarts): "replaced": once the federation has
    #: re-placed the gang on cluster-a and it runs there (a long outage); "at-once": right after the
    #: action (an agent that crashed and was restarted by its Deployment: the gang then either resumes
    #: where it was or is re-placed, whichever the timing gives; never twice, never by halves for long)
    heal_at: str = "replaced"
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
    """One scenario played in a :class:`Lab`: the job, its generations (the one running at the
    action, the one running whole at the end: the same one when the gang resumed), what was seen."""

    scenario: Scenario
    job: str
    generations: tuple[int, int]
    by_halves: list[str]
    #: the clusters the final generation runs on
    final_clusters: frozenset[str] = frozenset()


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
        side = system.start_agent("cluster-a")  # starts beside cluster-b's (both import for seconds)
        self.partition.open()
        self.partition.start_agent()
        url = side.wait_for(AGENT_LISTENING, system.startup_timeout).group(1)
        self.side = netns.sampler(self.samples / "cluster-a.jsonl", f"{url}/status")
        self.mark("federation, cluster-a's agent and cluster-b's agent (in its namespace) up")
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
        """:meth:`play_together` with one scenario."""
        (played,) = await self.play_together([scenario])
        return played

    async def play_together(self, scenarios: Sequence[Scenario]) -> list[Played]:
        """Bring each scenario's gang to its moment in turn (a transient moment, "reserved", goes last),
        then act once for all (cut cluster-b off or SIGKILL its agent), heal when the scenarios say,
        and wait until every gang runs whole under one generation and cluster-b is Ready again with
        its agent running nothing of an older generation."""
        action, heal_at = scenarios[0].action, scenarios[0].heal_at
        if any((s.action, s.heal_at) != (action, heal_at) for s in scenarios):
            raise ValueError("scenarios played together share their action and when they heal")
        jobs = [await self._to_moment(scenario) for scenario in scenarios]
        self.mark(", ".join(f"{name}: generation {first} {s.when}" for s, name, first, _ in jobs)
                  + f": {action} cluster-b")
        if action == "cut":
            self.partition.cut()
        else:
            self.system.agents["cluster-b"].kill()
        if heal_at == "replaced":
            for _scenario, name, first, halves in jobs:
                await until(lambda n=name, f=first, h=halves: self._replaced(n, f, h), self.patience,
                            f"{name} re-placed on cluster-a and running")
                self.mark(f"{name}: re-placed on cluster-a and running")
            if max(s.hold_after for s in scenarios) > 0:
                # bench: a longer partition; the samplers keep watching
                await asyncio.sleep(max(s.hold_after for s in scenarios))
        healed = time.time()
        if action == "cut":
            self.partition.heal()
        else:
            self.partition.start_agent()  # on the same /status port: its sampler keeps one timeline
        self.mark("healed" if action == "cut" else "cluster-b's agent restarted")
        played = []
        for scenario, name, first, halves in jobs:
            final = await until(lambda n=name, h=halves: self._whole(n, h, healed), self.patience,
                                f"{name} running whole under one generation")
            generation = next(iter(final.values())).generation
            self.mark(f"{name}: generation {generation} runs whole on {sorted(final)}")
            played.append(Played(scenario, f"default.{name}", (first, generation), halves, frozenset(final)))
        for run in played:
            await until(lambda r=run: self._left(self.rc, "cluster-b", r, healed), self.patience,
                        f"cluster-b Ready again and its agent running nothing of {run.job} but generation "
                        f"{run.generations[1]}")
        self.mark("cluster-b Ready, nothing of an older generation there")
        for run in played:
            run.by_halves[:] = sorted(set(run.by_halves))
        return played

    async def _to_moment(self, scenario: Scenario) -> tuple[Scenario, str, int, list[str]]:
        """Apply the scenario's Job and wait for its moment; (scenario, name, generation, [])."""
        rc = self.rc
        job = named(seed_one("job-pytorch-dist-training.yaml"), f"chaos-{scenario.name}", seconds=scenario.job_seconds)
        name = job["metadata"]["name"]
        await apply(rc, job)
        wanted = {"Running"} if scenario.when == "running" else {"Reserved", "Released", "Running"}
        await until(lambda: _gang_phase(rc, name, "cluster-b", wanted), 90, f"{name}: cluster-b's share {wanted}")
        if scenario.when == "running":
            await until(lambda: _gang_phase(rc, name, "cluster-a", {"Running"}), 60, f"{name}: cluster-a's share Running")
        first = max(s.generation for s in (await shares(rc, name)).values())
        return scenario, name, first, []

    async def _halves(self, name: str, halves: list[str]) -> None:
        """Collect the Job's "runs by halves" condition messages."""
        conditions = ((await self.rc.get(JOB, name, "default")).get("status") or {}).get("conditions") or []
        halves.extend(c.get("message", "") for c in conditions
                      if c.get("type") == "GangStarted" and c.get("reason") == "RunningByHalves")

    async def _replaced(self, name: str, first: int, halves: list[str]) -> Any:
        await self._halves(name, halves)
        now = await shares(self.rc, name)
        ok = set(now) == {"cluster-a"} and now["cluster-a"].generation > first and now["cluster-a"].running
        return now if ok else None

    async def _whole(self, name: str, halves: list[str], since: float) -> Any:
        """The shares of the job's newest generation when every one of them runs all its pods, as the
        Works' status says and as each agent's own /status said in a sample after ``since`` (a status
        written before a kill must not pass for the restarted agent's)."""
        await self._halves(name, halves)
        now = await shares(self.rc, name)
        if not now or any(s.running < s.replicas for s in now.values()):
            return None
        for cluster, share in now.items():
            sample = _last_sample(self.samples / f"{cluster}.jsonl", since)
            work = ((sample or {}).get("works") or {}).get(f"default.{name}") or {}
            if int((work.get("running") or {}).get(str(share.generation), 0)) < share.replicas:
                return None
        return now

    async def _left(self, rc: Any, cluster: str, run: Played, since: float) -> Any:
        """Whether ``cluster`` is Ready and untainted and a sample its agent answered after ``since``
        shows the job there only at its final generation with nothing older running (absent where
        the final generation has no share: the federation withdrew it, the agent saw it go)."""
        obj = await rc.get(CLUSTER, cluster)
        ready = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        sample = _last_sample(self.samples / f"{cluster}.jsonl", since)
        final = run.generations[1]
        work = (sample.get("works") or {}).get(run.job) if sample is not None and sample.get("ok") else None
        if sample is None or not sample.get("ok"):
            rid = False
        elif cluster not in run.final_clusters:
            rid = work is None
        else:
            rid = work is not None and work.get("generation") == final and all(
                int(g) == final for g, n in (work.get("running") or {}).items() if int(n) > 0)
        # the taints go in a write after Ready: a Job placed between the two would skip the cluster
        untainted = not (obj.get("spec") or {}).get("taints")
        return bool(ready and ready[0].get("status") == "True" and untainted and rid)

    async def placed(self, name: str) -> dict[str, int]:
        """Apply one more of the seed's gangs and return its first placement (cluster -> replicas),
        read from its ResourceBinding (written in one piece, unlike the Works)."""
        await apply(self.rc, named(seed_one("job-pytorch-dist-training.yaml"), name, seconds=3000))

        async def scheduled() -> Any:
            try:
                rb = await self.rc.get(BINDING, binding_name(name, "Job"), "default")
            except ApiException as err:
                if err.status == 404:  # not placed yet
                    return None
                raise
            clusters = (rb.get("spec") or {}).get("clusters") or []
            return {c["name"]: int(c.get("replicas") or 0) for c in clusters} or None

        split: dict[str, int] = await until(scheduled, 30, f"{name} placed")
        self.mark(f"{name}: placed {split}")
        return split

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
