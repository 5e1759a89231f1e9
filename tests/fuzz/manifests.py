"""Hypothesis strategies for manifests of every served kind: valid ones and mutated ones.

A valid manifest is one of the samples in ``tests/apiserver/data/kinds.yaml`` (one per kind) under
a fresh name. A mutated one replaces one node of it (anywhere: metadata, spec, a quantity, a
list) with a hostile value (huge or negative numbers, booleans, ``1e309``, wrong types, long or
odd strings) or deletes it. The server must answer either with 2xx or a 4xx Status.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from policies.kinds import KindInfo, lookup

SAMPLES: list[dict[str, Any]] = [entry["object"] for entry in yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "apiserver" / "data" / "kinds.yaml").read_text())]
#: Kinds the fuzzer posts (Bindings/Evictions are subresources; a Namespace sample would nest objects).
FUZZED: list[tuple[KindInfo, dict[str, Any]]] = [(lookup(s["apiVersion"], s["kind"]), s) for s in SAMPLES]
_NAMES = itertools.count()

HOSTILE_SCALARS: list[Any] = [
    None, True, False, 0, -1, 2**31, -(2**31) - 1, 2**63, 10**30, 1.5, -0.0, 1e308,
    "", " ", "1e309", "-1", "1.5", "1m", "999999999999999999999999999999", "nan", "inf", "Ki", "\u0000",
    "a" * 64, "x" * 5000, "Ünïcödé", "../../etc", "a=b=c", "-bad", "UPPER", "with space", [], {}, [1, 2],
    {"a": 1}, ["x"] * 3,
]


def fresh_name() -> str:
    return f"fz-{next(_NAMES)}"


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (dict keys and list indices), the node itself first."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(paths_of(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(paths_of(value, (*prefix, index)))
    return found


def mutate(obj: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if not path:
        return out
    parent: Any = out
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return out


hostile_values = st.one_of(st.sampled_from(HOSTILE_SCALARS), st.integers(), st.text(max_size=12),
                           st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def manifests(draw: st.DrawFn, mutated: bool = True) -> tuple[KindInfo, dict[str, Any]]:
    """(kind, manifest): a sample under a fresh name, mutated at one node when ``mutated``."""
    info, sample = draw(st.sampled_from(FUZZED))
    obj = copy.deepcopy(sample)
    obj["metadata"] = dict(obj.get("metadata") or {}, name=fresh_name())
    obj["metadata"].pop("namespace", None)
    if mutated and draw(st.booleans()):
        paths = [p for p in paths_of(obj) if p]
        path = draw(st.sampled_from(paths))
        obj = mutate(obj, path, draw(hostile_values), delete=draw(st.integers(0, 4)) == 0)
    return info, obj
