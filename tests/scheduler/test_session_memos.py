"""What a session remembers from earlier sessions, or reads on Python values instead of arrays,
must give what the plain computation gives (issue 41, round 7):

* water filling remembered by its inputs: a hit equals a fresh fill, byte for byte, and hands
  out arrays of the caller's own;
* plugin arguments remembered per arguments object: a changed object is parsed again, and each
  call gets a dict of its own;
* ``is_empty`` on a list, ``LeftOut.kept_in`` in C, and the whole-number flag of a job's queue
  terms read with ``float.is_integer``: each equal to the numpy reading it replaced;
* drf's and proportion's shares as the largest product on Python floats, and proportion's
  overused check as ``fits`` on Python values (round 8): equal to the numpy readings.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.actions import REGISTRY as ACTIONS
from member_agent.scheduler.cycle import build_actions, build_plugins
from member_agent.scheduler.framework import registry as registry_module
from member_agent.scheduler.framework.dims import TOLERANCE, Dimensions, fits, fits_values, is_empty
from member_agent.scheduler.framework.left_out import LeftOut
from member_agent.scheduler.plugins import REGISTRY
from member_agent.scheduler.plugins import water_fill as water_fill_module
from member_agent.scheduler.plugins.drf_shares import largest_product
from member_agent.scheduler.plugins.queue_terms import whole_numbers
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_proportion_water_fill import ALWAYS, _attrs

SPEC = [(1, [1e10] * 4, [3.0, 3.0, 0.0, 0.0], [0.0] * 4, [1.0] * 4),
        (2, [7.5, 1e10, 1e10, 1.0], [1000.0, 7.5, 1.0, 0.3], [0.3, 0.0, 0.0, 0.0], [0.0] * 4)]
TOTAL = np.array([1000.0, 3.3e12, 7.5, 3.0])


def _fill(spec: list, total: np.ndarray) -> list:
    attrs = _attrs(copy.deepcopy(spec))
    assert water_fill_module._fill_floats(attrs, total, ALWAYS)
    return attrs


def test_a_remembered_water_fill_equals_a_fresh_one_and_hands_out_new_arrays() -> None:
    water_fill_module._FILLED.clear()
    first = _fill(SPEC, TOTAL)
    assert len(water_fill_module._FILLED) == 1
    first[0].deserved[:] = -1.0  # a caller changing what it was given must not reach the memo
    second = _fill(SPEC, TOTAL)
    assert len(water_fill_module._FILLED) == 1  # a hit
    water_fill_module._FILLED.clear()
    fresh = _fill(SPEC, TOTAL)
    for a, b in zip(second, fresh, strict=True):
        assert a.deserved.tobytes() == b.deserved.tobytes() and a.share == b.share
    assert all(a.deserved is not b.deserved for a in second for b in first)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 3.0, 7.5, 1000.0]), min_size=4, max_size=4),
       st.integers(1, 5))
def test_other_inputs_are_not_answered_from_the_memo(request_row: list[float], weight: int) -> None:
    """Each field the rounds read is part of the key: changing one gives that input's own fill."""
    spec = copy.deepcopy(SPEC)
    spec[1] = (weight, spec[1][1], request_row, spec[1][3], spec[1][4])
    remembered = _fill(spec, TOTAL)
    water_fill_module._FILLED.clear()
    fresh = _fill(spec, TOTAL)
    for a, b in zip(remembered, fresh, strict=True):
        assert a.deserved.tobytes() == b.deserved.tobytes() and a.share == b.share


def test_plugin_arguments_are_parsed_again_when_their_object_changes() -> None:
    raw = {"binpack.weight": 3}
    values, _ = REGISTRY.parse("binpack", raw)
    again, _ = REGISTRY.parse("binpack", raw)
    assert values == again and values is not again and again["binpack.weight"] == 3
    again["binpack.weight"] = 99  # the caller's dict: the next call does not see it
    assert REGISTRY.parse("binpack", raw)[0]["binpack.weight"] == 3
    raw["binpack.weight"] = 5  # the same object, changed in place
    assert REGISTRY.parse("binpack", raw)[0]["binpack.weight"] == 5
    unknown = {"binpack.nosuch": 1}
    first, warnings = REGISTRY.parse("binpack", unknown)
    warnings.append("x")
    assert len(REGISTRY.parse("binpack", unknown)[1]) == 1
    assert registry_module._PARSED_KEPT > 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, TOLERANCE / 2, TOLERANCE, 1.0, -1.0, np.inf, np.nan]), min_size=3, max_size=7))
def test_is_empty_on_a_list_reads_as_the_array_did(values: list[float]) -> None:
    vector = np.array(values)
    assert is_empty(vector) == bool(np.all(np.delete(vector, Dimensions.PODS) < TOLERANCE))


@given(st.lists(st.integers(0, 30), max_size=40), st.sets(st.integers(0, 30)))
def test_kept_in_keeps_the_specs_not_left_out_in_order(uids: list[int], left: set[int]) -> None:
    specs = tuple(SimpleNamespace(uid=f"u{i}") for i in uids)
    out = LeftOut()
    out.fragments = {f"u{i}": None for i in left}  # type: ignore[misc]
    kept = list(out.kept_in(specs))  # type: ignore[arg-type]
    assert kept == [s for s in specs if s.uid not in out.fragments]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, -0.0, 1.0, 0.5, 3e15, 2.0 ** 60, np.inf, -np.inf, np.nan]),
                         min_size=1, max_size=5), min_size=1, max_size=6))
def test_the_whole_number_flag_of_queue_terms_reads_as_the_array_did(parts: list[list[float]]) -> None:
    vectors = [np.array(p) for p in parts]
    stacked = np.concatenate(vectors)
    expected = bool(np.isfinite(stacked).all() and (np.floor(stacked) == stacked).all())
    assert whole_numbers(vectors) == expected


def test_a_conf_built_again_reuses_its_parsed_arguments() -> None:
    """Every session builds its conf's actions and plugins: an action without ``configurations``
    gets the one shared empty mapping, so its parse is remembered like the plugins' are."""
    conf = parse_scheduler_conf('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
                                '  - name: binpack\n    arguments:\n      binpack.weight: 2\n')
    assert conf.action_arguments("allocate") is conf.action_arguments("enqueue")
    build_actions(conf, ACTIONS)
    build_plugins(conf, REGISTRY)
    kept = (dict(ACTIONS._parsed), dict(REGISTRY._parsed))
    actions, _ = build_actions(conf, ACTIONS)
    tiers, _ = build_plugins(conf, REGISTRY)
    assert (ACTIONS._parsed, REGISTRY._parsed) == kept  # nothing parsed afresh
    assert [type(a).__name__ for a in actions] == ["Enqueue", "Allocate", "Backfill"]
    assert [option.name for option, _ in tiers[0]] == ["gang", "binpack"]


_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 3.0]))


@given(st.lists(st.tuples(_FLOATS, _FLOATS), min_size=1, max_size=6))
def test_the_largest_product_on_floats_reads_as_the_arrays_did(pairs: list[tuple[float, float]]) -> None:
    # drf's and proportion's shares (round 8): a plain loop on Python floats instead of numpy's
    # multiply and max over the list; the same value, signed zeros and NaNs included
    values, factors = (np.array(column) for column in zip(*pairs, strict=True))
    with np.errstate(all="ignore"):
        expected = float(max((values * factors).tolist()))
    found = largest_product(values.tolist(), factors.tolist())
    assert repr(found) == repr(expected)


_DIM = st.sampled_from([0.0, -0.0, TOLERANCE / 2, TOLERANCE, 1.0, 1.05, 2.0, -1.0, np.inf, -np.inf, np.nan])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_DIM, _DIM, st.booleans()), min_size=1, max_size=6))
def test_fits_on_values_reads_as_fits_on_vectors(dims: list[tuple[float, float, bool]]) -> None:
    # proportion's overused check per queue pop (round 8) reads the vectors' tolist()
    request, available, always = (np.array(column) for column in zip(*dims, strict=True))
    with np.errstate(all="ignore"):
        expected = fits(request, available, always.astype(bool))
    assert fits_values(request.tolist(), available.tolist(), always.astype(bool).tolist()) == expected
