"""The federation's volcano-scheduler.conf: which queue plugin rules fleet admission, and the refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from federation.cli.scheduler_conf_flag import read_scheduler_conf
from federation.fleet_queues.conf import fleet_conf, load
from federation.fleet_queues.model import FleetConf
from policies.errors import InvalidConfiguration
from tests.conftest import DATA, REPO

CONFS = DATA / "fleet_queues" / "confs"


def test_volcano_default_conf_is_proportion_and_leaves_room_to_placement() -> None:
    assert fleet_conf() == FleetConf(plugin="proportion", hierarchical=False, enqueue=True, overcommit_factor=None)


def test_a_configmap_with_capacity_hierarchy_and_a_written_overcommit_factor() -> None:
    conf = read_scheduler_conf(str(CONFS / "capacity-hierarchy-configmap.yaml"))
    assert conf == FleetConf(plugin="capacity", hierarchical=True, enqueue=True, overcommit_factor=1.5, reclaim=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("tiers: [{plugins: [{name: proportion, enableJobEnqueued: false}]}]",
     FleetConf(plugin="proportion", enqueue=False, overcommit_factor=None)),
    ("tiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: 0.5}}]}]",  # below 1: Volcano's 1.2
     FleetConf(plugin=None, overcommit_factor=1.2)),
    ("tiers: [{plugins: [{name: gang}]}]", FleetConf(plugin=None, overcommit_factor=None)),
    # the reclaim (or gangreclaim) action turns on reclaim across clusters; Volcano's default has neither
    ("actions: 'enqueue, allocate, reclaim'\ntiers: [{plugins: [{name: proportion}]}]", FleetConf(reclaim=True)),
    ("actions: 'enqueue, allocate, gangreclaim'\ntiers: [{plugins: [{name: proportion}]}]", FleetConf(reclaim=True)),
    ("actions: 'enqueue, allocate, preempt'\ntiers: [{plugins: [{name: proportion}]}]", FleetConf(reclaim=False)),
])
def test_conf_table(text: str, expected: FleetConf) -> None:
    assert load(text)[1] == expected


def test_both_proportion_and_capacity_are_refused_with_the_field_path() -> None:
    path = CONFS / "both-queue-plugins.yaml"
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ")
    with pytest.raises(InvalidConfiguration) as err:
        read_scheduler_conf(str(path))
    assert f"{expected}: plugin 'capacity' conflicts with 'proportion' (tiers[1].plugins[0].name)" in str(err.value)
    assert "cannot be enabled together" in str(err.value)


@pytest.mark.parametrize(("text", "where"), [
    ("actions: 'enqueue, nonsense'", "actions"),
    ("tiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: lots}}]}]", "overcommit-factor"),
])
def test_bad_confs_are_refused(text: str, where: str) -> None:
    with pytest.raises(InvalidConfiguration, match=where):
        load(text)


@pytest.mark.slow  # two interpreter start-ups (~7 s each on the shared machine)
@pytest.mark.parametrize("command", ["serve", "controllers"])
def test_the_cli_refuses_a_bad_conf_before_starting(command: str, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
                          "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
                          "users: [{name: u, user: {token: t}}]\n")
    extra = ["--kubeconfig", str(kubeconfig)] if command == "controllers" else ["--data-dir", str(tmp_path / "d")]
    done = subprocess.run([sys.executable, "-m", "federation", command, *extra, "--scheduler-conf",
                           str(CONFS / "both-queue-plugins.yaml")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--scheduler-conf" in done.stderr and "tiers[1].plugins[2].name" in done.stderr, done.stderr
    assert not (tmp_path / "d").exists()  # nothing started, nothing stored
