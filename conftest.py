"""Root conftest: how the suite splits across pytest-xdist workers (`-n auto --dist loadgroup`).

Every test gets an ``xdist_group``; a group runs on one worker, in order:
- a unit test's group is its module, so module- and session-scoped servers start once per worker;
- the end-to-end tests form two groups. The fault and HA tests (partitions, killed leaders, lease
  timings) are one: they never overlap each other, which keeps their timing margins as in a serial run.
  The others are the second. Each group starts at most one federation at a time.
Without ``-n`` (a single file, a debugger) the marks do nothing.

The order groups are handed out matters on two cores: the longest go first, so that nothing long is left
for the end while the other worker idles. pytest-xdist would hand them out by test count (the e2e groups,
with few but long tests, went last and the fault group alone ran for minutes after everything else), so
its reordering is off and a worker's collection is sorted here instead (stably: a module keeps its order):
the fault group, the other e2e group, then groups with ``slow`` tests (most first), then by test count.

An end-to-end test gets one rerun (pytest-rerunfailures): its deadlines are set for a quiet machine, and
beside the other worker a lease or an election can miss one. A test that fails twice fails; every rerun
is listed in the summary (``R``), so a test that starts needing it shows.
"""

from __future__ import annotations

import pytest

#: e2e modules whose assertions ride on lease and failover timings; they share one worker
FAULT_MODULES = frozenset({
    "test_partition.py", "test_ha.py", "test_ha_agent_outage.py", "test_ha_paused_leader.py",
    "test_ha_agent_election.py", "test_agent_failover.py", "test_federation_crash.py",
})


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist >= 3.6; the controller schedules by it
        config.option.loadscopereorder = False


def is_e2e(item: pytest.Item) -> bool:
    return item.path.parent.name == "e2e"


def xdist_group_of(item: pytest.Item) -> str:
    if is_e2e(item):
        return "e2e-faults" if item.path.name in FAULT_MODULES else "e2e"
    return str(item.path.relative_to(item.config.rootpath))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
        if is_e2e(item) and item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=1))
    if hasattr(config, "workerinput"):  # an xdist worker: its collection is what the controller hands out
        items[:] = longest_groups_first(items)


def group_of(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0] if mark and mark.args else mark.kwargs.get("name", "") if mark else "")


def longest_groups_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` stably sorted by their group's expected length (see the module's docstring)."""
    slow: dict[str, int] = {}
    count: dict[str, int] = {}
    for item in items:
        group = group_of(item)
        count[group] = count.get(group, 0) + 1
        slow[group] = slow.get(group, 0) + (item.get_closest_marker("slow") is not None)
    first = {"e2e-faults": 0, "e2e": 1}

    def rank(item: pytest.Item) -> tuple[int, int, int]:
        group = group_of(item)
        return first.get(group, 2), -slow[group], -count[group]

    return sorted(items, key=rank)
