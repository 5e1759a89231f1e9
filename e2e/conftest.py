"""Fixtures: real ``caldera serve`` + ``caldera agent`` processes on loopback, in tmp dirs.

``systems`` is a factory: ``systems(clusters, serve_args=..., agent_args=...)`` starts a federation
and one sim agent per cluster and returns the :class:`~federation.demo.processes.System`. At
teardown every process is stopped and the fixture *asserts* (from ``/proc``) that nothing any of
them started is still alive and that no caldera child of this pytest process remains.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from e2e.ha_system import HA
from e2e.harness import AGENT_ARGS, SPEED, WATCHED, seed_clusters
from federation.demo.processes import ClusterSpec, System, leftover_processes

SystemFactory = Callable[..., System]


def caldera_children() -> list[str]:
    """Processes whose parent is this pytest process and that run a caldera command."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[1] == me and fields[0] not in ("Z", "X") and ("federation" in cmdline or "member_agent" in cmdline):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def _stop_all(made: list[System]) -> None:
    for system in made:
        if system in WATCHED:
            WATCHED.remove(system)
        system.stop()
    groups = {g for s in made for g in s.groups()}
    left = leftover_processes(groups)
    assert not left, f"processes survived teardown: {left}"
    assert not caldera_children(), f"caldera children survived teardown: {caldera_children()}"


def _factory(base: Path, made: list[System]) -> SystemFactory:
    def start(clusters: Optional[list[ClusterSpec]] = None, *, serve_args: tuple[str, ...] = (),
              agent_args: tuple[str, ...] = (), speed: float = SPEED, **kw: Any) -> System:
        data_dir = base / f"system-{len(made)}"
        system = System(data_dir, clusters or seed_clusters(), speed=speed, serve_args=list(serve_args),
                        agent_args=[*AGENT_ARGS, *agent_args], **kw)
        made.append(system)
        WATCHED.append(system)
        return system.start()

    return start


@pytest.fixture
def systems(tmp_path: Path) -> Iterator[SystemFactory]:
    made: list[System] = []
    yield _factory(tmp_path, made)
    _stop_all(made)


@pytest.fixture(scope="module")
def module_systems(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemFactory]:
    """Like ``systems``, shared by the tests of one module (each test uses its own job names)."""
    made: list[System] = []
    yield _factory(tmp_path_factory.mktemp("e2e"), made)
    _stop_all(made)


@pytest.fixture(scope="module")
def seed_system(module_systems: SystemFactory) -> System:
    """The seed's two clusters, cluster-a (8x8 A100) and cluster-b (16x8 H100)."""
    return module_systems()


@pytest.fixture
def ha_spec() -> dict[str, Any]:
    """Arguments of :class:`e2e.ha_system.HA` (lease timings, agent replicas); a test module overrides it."""
    return {}


@pytest.fixture
async def ha(tmp_path: Path, ha_spec: dict[str, Any]) -> AsyncIterator[HA]:
    """The highly available federation (3 etcd, 3 ``caldera serve``, sim agents), stopped afterwards."""
    system = HA(tmp_path, **ha_spec)
    try:
        system.start()
        yield system
    finally:
        system.stop()
