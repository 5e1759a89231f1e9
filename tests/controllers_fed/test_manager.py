"""The controller manager apart from the API server: ``caldera controllers`` against an API-only
server places and dispatches a job; a gate (leader election) decides when controllers run; a bad
kubeconfig is refused naming the field."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli import main as caldera
from federation.cli.compose import FederationServer
from federation.client import api_client_from_dict
from federation.controllers.context import ControllerContext
from federation.controllers.manager import ControllerManager, Lead
from tests.controllers_fed.conftest import Fed, until
from tests.controllers_fed.test_placement_dispatch import seed

KUBECONFIG = {"apiVersion": "v1", "kind": "Config",
              "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
              "current-context": "x"}


async def condition(check: Any, what: str) -> None:
    async def probe() -> bool:
        return bool(check())

    await until(probe, what, timeout=10.0)


@pytest.mark.slow
async def test_caldera_controllers_process_places_and_dispatches(tmp_path: Path) -> None:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as server, \
            api_client_from_dict(server.kubeconfig()) as api:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "federation", "controllers", "--kubeconfig",
            str(tmp_path / "data" / "admin.kubeconfig"), "--cluster-monitor-period", "1",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            fed = Fed(server, api)
            await seed(fed, "job-gpu-dist-training")
            rb = await until(lambda: fed.rb("gpu-dist-training"), "the binding from the separate process", 60)
            assert {c["name"]: c["replicas"] for c in rb["spec"]["clusters"]} == {"cluster-a": 3, "cluster-b": 5}
            async def both_works() -> dict[str, Any] | None:
                works = await fed.works("gpu-dist-training")
                return works if len(works) == 2 else None

            works = await until(both_works, "two Works from the separate process", 30)
            assert set(works) == {"cluster-a", "cluster-b"}
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            output, _ = await asyncio.wait_for(proc.communicate(), 30)
        text = output.decode()
        assert proc.returncode == 0, text
        assert f"against {server.url}" in text and "placement" in text and "shutting down" in text


async def test_a_gate_decides_when_the_controllers_run(tmp_path: Path) -> None:
    started: list[ControllerContext] = []
    stopped: list[ControllerContext] = []
    terms: list[int] = []

    async def controller(ctx: ControllerContext) -> None:
        started.append(ctx)
        await ctx.stop.wait()
        stopped.append(ctx)

    async def two_terms_then_follow(lead: Lead, stop: asyncio.Event) -> None:
        for term in (1, 2):
            lost = asyncio.Event()
            leading = asyncio.create_task(lead(lost))
            await condition(lambda term=term: len(started) == term, f"term {term} started")
            lost.set()  # the lease is lost: lead() stops the controllers and returns
            await leading
            terms.append(term)
        await stop.wait()

    async with ControllerManager(KUBECONFIG, [controller], data_dir=tmp_path, options={"k": 1},
                                 gate=two_terms_then_follow):
        await condition(lambda: terms == [1, 2], "two terms")
        assert len(stopped) == 2  # each term's controller saw its stop before lead() returned
    ctx = started[0]
    assert (ctx.url, ctx.data_dir, ctx.extra) == ("http://127.0.0.1:9", tmp_path, {"k": 1})
    assert ctx.kubeconfig == KUBECONFIG and not hasattr(ctx, "server")


async def test_a_crashed_controller_leaves_the_others_running() -> None:
    seen: list[str] = []

    async def crashes(ctx: ControllerContext) -> None:
        seen.append("crashed")
        raise RuntimeError("boom")

    async def keeps_going(ctx: ControllerContext) -> None:
        seen.append("running")
        await ctx.stop.wait()
        seen.append("stopped")

    async with ControllerManager(KUBECONFIG, [crashes, keeps_going]):
        await condition(lambda: {"crashed", "running"} <= set(seen), "both controllers started")
        assert "stopped" not in seen
    assert seen.count("stopped") == 1


async def test_serve_composition_runs_no_controllers_when_told_or_in_member_mode(tmp_path: Path) -> None:
    async def never(ctx: ControllerContext) -> None:
        raise AssertionError("no controller may start")

    async with FederationServer(ServerConfig(data_dir=tmp_path / "a"), [never], run_controllers=False) as a:
        assert a.manager is None
    async with FederationServer(ServerConfig(data_dir=tmp_path / "b", member_mode=True), [never]) as b:
        assert b.manager is None


BAD_KUBECONFIGS = [
    ("not: [yaml", "while parsing"),
    ("- a list\n", "not a kubeconfig mapping"),
    ("apiVersion: v1\n", "no contexts[]"),
    (yaml.safe_dump({**KUBECONFIG, "current-context": "y"}), "current-context 'y' is not one of contexts[].name"),
    (yaml.safe_dump({**KUBECONFIG, "clusters": []}), "contexts[x].context.cluster 'c' is not one of clusters[].name"),
    (yaml.safe_dump({**KUBECONFIG, "clusters": [{"name": "c", "cluster": {"server": "127.0.0.1:9"}}]}),
     "clusters[c].cluster.server must be an http:// or https:// URL, got '127.0.0.1:9'"),
]


@pytest.mark.parametrize(("text", "message"), BAD_KUBECONFIGS)
def test_bad_kubeconfig_is_refused_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    text: str, message: str) -> None:
    path = tmp_path / "bad.kubeconfig"
    path.write_text(text)
    assert caldera(["controllers", "--kubeconfig", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"--kubeconfig {path}" in err and message in err


def test_missing_kubeconfig_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert caldera(["controllers", "--kubeconfig", str(tmp_path / "absent")]) == 1
    assert "not found" in capsys.readouterr().err
