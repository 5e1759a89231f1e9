"""The agent's view of a fleet queue: capped at the allotments its cluster's Works carry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from member_agent.queue_allotment import allotted_queues
from policies.models.karmada_work import QUEUE_ALLOTMENT

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "ai-training"},
         "spec": {"weight": 3, "capability": {"nvidia.com/gpu": "32", "cpu": "200"},
                  "deserved": {"nvidia.com/gpu": "24"}, "guarantee": {"resource": {"nvidia.com/gpu": "16"}}}}


def _share(gpus: str | None, queue: str = "ai-training", raw: str | None = None) -> dict[str, Any]:
    notes = {} if gpus is None and raw is None else {QUEUE_ALLOTMENT: raw or json.dumps({"nvidia.com/gpu": gpus})}
    return {"metadata": {"name": "j", "annotations": notes}, "spec": {"queue": queue}}


@pytest.mark.parametrize(("shares", "capability", "deserved", "guarantee"), [
    # two shares of 8 GPUs here: the queue may use 16 GPUs in this cluster, whatever its fleet capability
    ([_share("8"), _share("8")], {"nvidia.com/gpu": "16", "cpu": "200"}, {"nvidia.com/gpu": "16"},
     {"nvidia.com/gpu": "16"}),
    # a share of 4: capability 4, deserved and guarantee clipped to it
    ([_share("4")], {"nvidia.com/gpu": "4", "cpu": "200"}, {"nvidia.com/gpu": "4"}, {"nvidia.com/gpu": "4"}),
    # allotments never raise a capability: 40 admitted here (impossible, but) stays at the spec's 32
    ([_share("40")], {"nvidia.com/gpu": "32", "cpu": "200"}, {"nvidia.com/gpu": "24"}, {"nvidia.com/gpu": "16"}),
])
def test_allotment_caps_the_local_queue(shares: list[Any], capability: dict[str, str], deserved: dict[str, str],
                                        guarantee: dict[str, str]) -> None:
    (view,) = allotted_queues([QUEUE], shares)
    assert view["spec"]["capability"] == capability
    assert view["spec"]["deserved"] == deserved
    assert view["spec"]["guarantee"]["resource"] == guarantee
    assert QUEUE["spec"]["capability"] == {"nvidia.com/gpu": "32", "cpu": "200"}  # the input is not changed


@pytest.mark.parametrize("shares", [
    [],  # nothing admitted here
    [_share(None)],  # a Work from a federation without fleet queues
    [_share("8", queue="other")],  # another queue's share
    [_share(None, raw="not json")],  # a malformed annotation caps nothing
])
def test_queues_without_an_allotment_here_are_left_as_they_are(shares: list[Any]) -> None:
    assert allotted_queues([QUEUE], shares) == [QUEUE]


def test_the_fleet_status_is_not_what_the_scheduler_sees() -> None:
    """Only status.state matters to a session; the fleet numbers change with every report."""
    fleet = {**QUEUE, "status": {"state": "Closed", "allocated": {"nvidia.com/gpu": "24"}, "pending": 3}}
    (plain,) = allotted_queues([fleet], [])
    (capped,) = allotted_queues([fleet], [_share("8")])
    assert plain["status"] == capped["status"] == {"state": "Closed"}
    assert fleet["status"]["pending"] == 3  # the input is not changed
