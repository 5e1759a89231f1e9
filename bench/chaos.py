"""Partition chaos: the e2e partition scenarios, more of them and longer, with a report.

    python bench/chaos.py [--scenario NAME ...] [--rounds N] [--hold SECONDS]

Each scenario starts one ``caldera serve``, cluster-a's agent, and cluster-b's agent in a network
namespace of its own (needs root and ``ip netns``), runs the seed's pytorch-dist-training gang
over both clusters, then cuts cluster-b off (or SIGKILLs its agent) at the scenario's moment, keeps
the partition ``--hold`` seconds after the gang was re-placed (kill-and-restart: restarts the agent
at once), heals, and prints what the samplers
saw (every 0.25 s per agent): two generations running at once (must be none) and the longest
stretch any generation ran by halves (bound: lease grace + pod termination grace + 5 s).
Settings: ``--cluster-lease-grace 10 --cluster-failover-grace 10 --pod-termination-grace 3``, or with
``--defaults`` every grace at its default (a scenario then takes a few minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e import netns  # noqa: E402
from e2e.partition_run import DEFAULTS, SHORT, Scenario, run  # noqa: E402
from e2e.partition_samples import report  # noqa: E402

SCENARIOS = {
    "gang-running": Scenario("gang-running", when="running", action="cut"),
    "reserved": Scenario("reserved", when="reserved", action="cut"),
    "kill-in-release": Scenario("kill-in-release", when="reserved", action="kill"),
    # the agent restarted at once (its Deployment): the gang resumes, or is re-placed if the restart is slow
    "kill-and-restart": Scenario("kill-and-restart", when="reserved", action="kill", heal_at="at-once"),
}


async def main(names: list[str], rounds: int, hold: float, defaults: bool) -> int:
    why = netns.unavailable()
    if why:
        print(f"chaos: cannot run: {why}")
        return 2
    settings = DEFAULTS if defaults else SHORT
    print(f"settings: caldera serve {' '.join(settings.serve_args) or '(defaults)'}, agents --lease-period "
          f"{settings.lease_period:g}; by-halves bound {settings.halves_bound:g}s")
    failures = 0
    for round_ in range(1, rounds + 1):
        for name in names:
            scenario = Scenario(**{**SCENARIOS[name].__dict__, "hold_after": hold})
            began = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"chaos-{name}-") as tmp:
                outcome = await run(Path(tmp), scenario, settings)
            found = outcome.findings
            ok = not found.double_runs and found.longest_halves() <= settings.halves_bound
            failures += 0 if ok else 1
            print(f"\n== round {round_} {name}: {'OK' if ok else 'VIOLATED'} ({time.monotonic() - began:.0f}s; "
                  f"generations {outcome.generations[0]} -> {outcome.generations[1]})")
            fence = outcome.fences.get("cluster-b") or {}
            print(f"cluster-b's fence: {fence.get('fenceSeconds')}s, spanning gangs {fence.get('spanningFenceSeconds')}s, "
                  f"pods' grace {fence.get('podTerminationGraceSeconds')}s ({fence.get('basis')})")
            print(report(found))
            for message in outcome.by_halves[:3]:
                print(f"  Job status GangStarted=False RunningByHalves: {message}")
            for at, what in outcome.timeline:
                print(f"  {at:6.1f}s {what}")
    print(f"\n{failures} scenario run(s) violated a guarantee")
    return 1 if failures else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the partition lasts after the re-placement")
    parser.add_argument("--defaults", action="store_true",
                        help="every grace at its default (lease 40 s, failover 300 s, 30 s pods, renew 10 s)")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.scenario or list(SCENARIOS), args.rounds, args.hold, args.defaults)))
