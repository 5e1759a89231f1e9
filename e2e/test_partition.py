"""A gang never runs twice and never by halves for long, with real processes and a real partition.

cluster-b's agent runs in a network namespace of its own; while the seed's pytorch-dist-training
gang runs on both clusters, the veth pair to it goes down. Its agent fences its share (spanning
fence: lease grace - renew period - 5 s), the federation tears the gang down when cluster-b turns
Unknown and re-places it on cluster-a, then the link heals. Every agent is sampled every 0.25 s:
at no sample do two generations of the job run, and no generation runs by halves longer than
lease grace + pod termination grace + 5 s. ``bench/chaos.py`` runs more scenarios, longer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e import netns
from e2e.partition_run import HALVES_BOUND, Scenario, run
from e2e.partition_samples import report

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
WHY_NOT = netns.unavailable()
SCENARIOS = [Scenario("gang-running", when="running", action="cut")]


@pytest.mark.skipif(WHY_NOT is not None, reason=f"network namespaces unavailable: {WHY_NOT}")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_partition_never_runs_a_gang_twice_or_by_halves(tmp_path: Path, scenario: Scenario) -> None:
    outcome = await run(tmp_path, scenario)
    found = outcome.findings
    text = report(found) + "\n" + "\n".join(f"{t:6.1f}s {what}" for t, what in outcome.timeline)
    assert found.samples > 50 and found.max_gap <= 0.5 + 0.25, text  # sampled every 0.5 s or faster
    fence = outcome.fences["cluster-b"]  # derived from the published graces: 10 - (2 + 5), 10 + 10 - 3 - 7
    assert (fence["spanningFenceSeconds"], fence["fenceSeconds"], fence["podTerminationGraceSeconds"]) == (3, 10, 3)
    first, second = outcome.generations
    job = f"default.chaos-{scenario.name}"
    assert found.ran.get((job, str(first))) == {"cluster-a", "cluster-b"}, text
    assert found.ran.get((job, str(second))) == {"cluster-a"}, text
    assert not found.double_runs, text
    assert found.longest_halves() <= HALVES_BOUND, text
