"""The rows a scheduler cache's events wrote between two snapshots (member_agent/scheduler/row_journal.py).

The shape carry trusts the journal instead of comparing the snapshots' arrays and device matrices: over
random event sequences every row the journal does not name has, in the two snapshots, bit-for-bit the
same accounting, the same folded devices and the same pods in the same roles; and for each writer a
scenario that fails when its recording line is removed.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.node_accounts import ARRAYS, TERMINAL
from member_agent.scheduler.resident_devices import DEVICE_ARRAYS
from member_agent.scheduler.row_journal import MAX_STAMPS, RowJournal, journal_of
from member_agent.scheduler.scheduler_cache import SchedulerCache
from tests.scheduler.test_shape_carry import QUEUE, _cache_of, _job, _node

NODES = 4


def _resident(name: str, node: str, gpus: str) -> dict[str, Any]:
    """A pod of no job on ``node`` holding ``gpus`` (folded into the node's device rows)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "r", "annotations": {"volcano.sh/gpu-index": gpus}},
            "spec": {"schedulerName": "other", "nodeName": node, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "nvidia.com/gpu": str(len(gpus.split(",")))}}}]},
            "status": {"phase": "Running"}}


def _row_state(snapshot: Any, row: int) -> tuple[Any, ...]:
    """Everything a session reads of a row that the cache's events write (ended pods hold nothing: a
    session puts them on no node)."""
    nodes = snapshot.nodes
    accounts = tuple(np.asarray(getattr(nodes, name))[row].tobytes() for name in ARRAYS)
    arrays = snapshot.device_arrays
    devices = tuple(np.asarray(getattr(arrays, name))[row].tobytes() for name in DEVICE_ARRAYS)
    name = nodes.names[row]
    pods = sorted((t.uid, t.status, t.job, tuple(sorted(t.extras.annotations.items())))
                  for job in snapshot.jobs for t in job.tasks if t.node == name and t.status not in TERMINAL)
    residents = sorted((t.uid, t.status) for t in snapshot.residents if t.node == name)
    return accounts, devices, snapshot.device_usage[row], pods, residents


def _assert_unwritten_rows_equal(cache: SchedulerCache, old: Any, new: Any) -> None:
    journal = journal_of(cache.ledger)
    assert journal is not None
    written = journal.written(old, new)
    assert written is not None
    for row in sorted(set(range(NODES)) - set(written)):
        assert _row_state(old, row) == _row_state(new, row), row


steps = st.lists(st.sampled_from(["bind", "end", "delete", "reannotate", "reside", "unreside",
                                  "drop group", "restore group", "group status", "snapshot"]),
                 min_size=4, max_size=24)


@settings(max_examples=150, deadline=None)
@given(steps=steps, seed=st.integers(0, 10_000))
def test_rows_the_journal_does_not_name_are_equal_in_both_snapshots(steps: list[str], seed: int) -> None:
    rng = random.Random(seed)
    jobs = {f"j{i}": _job(f"j{i}", rng.choice((0, 1, 5, 6)), 2) for i in range(4)}
    cache = _cache_of([*(_node(i, "a") for i in range(NODES)), QUEUE, *(o for objs in jobs.values() for o in objs)])
    snapshots = [cache.snapshot()]
    residents: dict[str, dict[str, Any]] = {}
    for n, step in enumerate(steps):
        name = rng.choice(sorted(jobs))
        group, pods = jobs[name][0], jobs[name][1:]
        pod = rng.choice(pods)
        spec, meta, status = pod["spec"], pod["metadata"], pod["status"]
        if step == "bind" and status["phase"] == "Pending":
            spec["nodeName"], status["phase"] = f"n{rng.randrange(NODES)}", "Running"
            meta["annotations"]["volcano.sh/gpu-index"] = str(rng.randrange(4))
        elif step == "end" and status["phase"] == "Running":
            status["phase"] = "Succeeded"
        elif step == "reannotate" and spec.get("nodeName"):
            meta["annotations"]["volcano.sh/gpu-index"] = str(rng.randrange(4))
        elif step == "delete":
            cache.delete(copy.deepcopy(pod))
            continue
        elif step == "reside":
            key = f"r{n}"
            residents[key] = _resident(key, f"n{rng.randrange(NODES)}", str(rng.randrange(4)))
            cache.upsert(copy.deepcopy(residents[key]))
            continue
        elif step == "unreside" and residents:
            cache.delete(residents.pop(sorted(residents)[0]))
            continue
        elif step == "drop group":
            cache.delete(copy.deepcopy(group))
            continue
        elif step in ("restore group", "group status"):
            group["status"]["phase"] = rng.choice(("Running", "Inqueue", "Pending"))
            cache.upsert(copy.deepcopy(group))
            continue
        elif step == "snapshot":
            snapshots.append(cache.snapshot())
            _assert_unwritten_rows_equal(cache, snapshots[-2], snapshots[-1])
            continue
        cache.upsert(copy.deepcopy(pod))
    snapshots.append(cache.snapshot())
    _assert_unwritten_rows_equal(cache, snapshots[-2], snapshots[-1])
    # the oldest snapshot the journal still vouches for, against the last
    _assert_unwritten_rows_equal(cache, snapshots[-min(len(snapshots), MAX_STAMPS)], snapshots[-1])


def test_a_pod_ended_between_snapshots_names_its_row() -> None:
    """NodeAccounts.account's recording."""
    running = _job("running", 5, 1, node="n2")
    cache = _cache_of([*(_node(i, "a") for i in range(NODES)), QUEUE, *running])
    first = cache.snapshot()
    running[1]["status"]["phase"] = "Succeeded"
    cache.upsert(copy.deepcopy(running[1]))
    journal = journal_of(cache.ledger)
    assert journal is not None and journal.written(first, cache.snapshot()) == [2]


def test_a_folded_resident_names_its_row() -> None:
    """ResidentDevices.reside and leave record on their own (the accounting records the row too)."""
    cache = _cache_of([*(_node(i, "a") for i in range(NODES)), QUEUE])
    cache.snapshot()
    held = cache._held
    held.written = []
    resident = _resident("r", "n1", "0,1")
    cache.upsert(copy.deepcopy(resident))
    assert held.written == [1]
    cache.delete(copy.deepcopy(resident))
    assert held.written == [1, 1]


def test_a_job_losing_its_podgroup_names_its_pods_rows() -> None:
    """Its pods turn residents of a session's device replay (SchedulerCache._derive_dirty_jobs' recording),
    and turn a job's pods again when the PodGroup is back; a PodGroup's status alone names nothing."""
    running = _job("running", 0, 2, node="n3", gpus="0")
    cache = _cache_of([*(_node(i, "a") for i in range(NODES)), QUEUE, *running])
    first = cache.snapshot()
    journal = journal_of(cache.ledger)
    assert journal is not None
    running[0]["status"]["phase"] = "Running"
    cache.upsert(copy.deepcopy(running[0]))
    second = cache.snapshot()
    assert journal.written(first, second) == []
    cache.delete(copy.deepcopy(running[0]))
    third = cache.snapshot()
    assert [t.uid for t in third.residents] and set(journal.written(second, third) or ()) == {3}
    cache.upsert(copy.deepcopy(running[0]))
    assert set(journal.written(third, cache.snapshot()) or ()) == {3}


def test_the_journal_vouches_only_for_stamped_snapshots_in_order() -> None:
    journal = RowJournal()
    a, b, c = object(), object(), object()
    journal.stamp(a)
    journal.rows.extend([4, 2])
    journal.stamp(b)
    assert journal.written(a, b) == [4, 2] and journal.written(b, b) == [] and journal.written(b, a) is None
    assert journal.written(a, c) is None  # never stamped
    journal.rows.append(7)
    journal.stamp(b)  # written since b was stamped, and b handed out again: no position is right for it
    assert journal.written(a, b) is None and journal.written(b, a) is None


def test_the_journal_trims_its_log_and_forgets_old_snapshots(monkeypatch: Any) -> None:
    from member_agent.scheduler import row_journal
    monkeypatch.setattr(row_journal, "TRIM_AT", 4)
    monkeypatch.setattr(row_journal, "MAX_STAMPS", 3)
    journal = RowJournal()
    stamped = []
    for i in range(10):
        journal.rows.extend([i, i])
        stamped.append(object())
        journal.stamp(stamped[-1])
    assert len(journal.rows) <= 2 * 3 + 4
    assert journal.written(stamped[-3], stamped[-1]) == [8, 8, 9, 9]
    assert journal.written(stamped[0], stamped[-1]) is None
