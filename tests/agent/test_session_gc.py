"""The collector's pace around sessions (member_agent/session_gc.py): relaxed while any holder runs, the
thresholds found restored when the last one leaves, and every way a session runs (the agent's cycle,
``caldera schedule``) holds it."""

from __future__ import annotations

import argparse
import gc
import threading
from typing import Any, Iterator

import pytest

from member_agent import schedule_cmd, scheduling, session_gc
from member_agent.scheduler import SessionOptions
from member_agent.scheduler.framework.result import CycleResult
from member_agent.session_gc import FULL_COLLECTION_EVERY, SESSION_GC_THRESHOLD, relaxed_gc
from policies.scheduler_conf import DEFAULT_CONF

STATE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    """Every test starts from CPython's defaults, whatever ran before, and leaves them so."""
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*found)


def test_inside_the_block_the_collector_is_relaxed_and_after_it_restored(
        default_thresholds: tuple[int, int, int]) -> None:
    with relaxed_gc():
        assert gc.get_threshold() == (SESSION_GC_THRESHOLD, 10, FULL_COLLECTION_EVERY)
    assert gc.get_threshold() == default_thresholds


def test_thresholds_already_looser_are_kept() -> None:
    gc.set_threshold(SESSION_GC_THRESHOLD * 2, 10, FULL_COLLECTION_EVERY * 3)
    with relaxed_gc():
        assert gc.get_threshold() == (SESSION_GC_THRESHOLD * 2, 10, FULL_COLLECTION_EVERY * 3)
    assert gc.get_threshold() == (SESSION_GC_THRESHOLD * 2, 10, FULL_COLLECTION_EVERY * 3)


def test_an_error_in_the_block_still_restores(default_thresholds: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), relaxed_gc():
        raise RuntimeError("session failed")
    assert gc.get_threshold() == default_thresholds


def test_overlapping_holders_restore_only_when_the_last_leaves(default_thresholds: tuple[int, int, int]) -> None:
    """A session in the agent's worker thread overlapping another holder (a replay, a second session):
    the one that leaves first must not restore the thresholds under the other."""
    first_in, second_in, first_out, second_done = (threading.Event() for _ in range(4))
    seen: dict[str, tuple[int, int, int]] = {}

    def second() -> None:
        with relaxed_gc():
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = gc.get_threshold()
        second_done.set()

    with relaxed_gc():
        first_in.set()
        worker = threading.Thread(target=second)
        worker.start()
        assert second_in.wait(10)
    first_out.set()
    assert second_done.wait(10)
    worker.join(10)
    assert seen["after the first left"][0] == SESSION_GC_THRESHOLD
    assert gc.get_threshold() == default_thresholds
    assert session_gc._holders == 0


def recording_cycle(seen: list[tuple[int, int, int]]) -> Any:
    def run_cycle(*args: Any, **kwargs: Any) -> CycleResult:
        seen.append(gc.get_threshold())
        return CycleResult()
    return run_cycle


def test_the_agents_cycle_runs_its_session_relaxed(monkeypatch: pytest.MonkeyPatch,
                                                   default_thresholds: tuple[int, int, int]) -> None:
    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(scheduling, "real_scheduler", lambda: (recording_cycle(seen), lambda objects, **_: objects))
    scheduling.run_once([], DEFAULT_CONF, clock=None, options=SessionOptions())
    assert seen == [(SESSION_GC_THRESHOLD, 10, FULL_COLLECTION_EVERY)]
    assert gc.get_threshold() == default_thresholds


def test_caldera_schedule_runs_its_session_relaxed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                   capsys: pytest.CaptureFixture[str],
                                                   default_thresholds: tuple[int, int, int]) -> None:
    state = tmp_path / "state.yaml"
    state.write_text(STATE)
    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(schedule_cmd, "run_cycle", recording_cycle(seen))
    parser = argparse.ArgumentParser(prog="caldera schedule")
    schedule_cmd.register(parser)
    assert schedule_cmd.run(parser.parse_args(["-f", str(state), "-o", "json"])) == 0
    assert seen == [(SESSION_GC_THRESHOLD, 10, FULL_COLLECTION_EVERY)]
    assert gc.get_threshold() == default_thresholds
    assert '"bindings"' in capsys.readouterr().out
