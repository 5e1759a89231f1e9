"""Node rows in the same state, grouped: what is computed for one row holds for its whole group.

A cluster is mostly pools of identical machines, and a session fills them with pods of a few
shapes, so the nodes a search visits are in few distinct states (the issue-41 mix: 3 states when
the session opens, 26 after 10,000 placements on 5,000 nodes). A row's *state* here is everything
a by-state callback may read of it (``Session.add``): allocatable, Idle, Used, Releasing, Pipelined,
the non-zero requests, the pod count and its maximum, and the per-row arrays plugins registered
with ``Session.add_row_state`` (predicates' in-session pod delta). Labels, taints and the node name
are not part of it: callbacks that read them expose that part as a per-shape static code.

Every row has a group id; rows with equal ids are in equal states (the converse is only the
common case: sharing is an optimisation, never a requirement). Ids are computed for every row
when the groups are first used (:func:`state_classes`); a row touched since (``Session.touch``)
is looked up again by its new state when an id is next read, and joins the group already in that
state, or a new one. So a placed pod that leaves its node in a state seen before (the next
node of the pool filled the same way) costs a shape a dictionary lookup, not an evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session

#: New states remembered by their bytes at most (a session whose every placement makes a new state,
#: e.g. one cpu request per job, would otherwise keep one key per placement); past it the keys are
#: dropped and a row back in a forgotten state gets a new id (correct, only shared less).
MAX_KEYS = 1 << 14
#: Up to this many opening states are keyed by their bytes (one pass per state); with more, a
#: touched row in a new state is compared with all of them at once instead.
KEYED_OPENING = 256
#: When group lookups mostly miss, one row in this many is still looked up (the hit rate is watched).
SAMPLE = 16


class NodeGroups:
    """A group id per node row (``ids``), current once :meth:`current` resolved the touched rows."""

    __slots__ = ("ids", "next_id", "opening", "dirty", "_columns", "_opening_states", "_keys", "lookups",
                 "hits", "skipped", "_moves", "_unknown", "_transitions")

    def __init__(self, ssn: Session) -> None:
        self._columns = state_columns(ssn)
        state = np.hstack(self._columns) if len(ssn.node_names) else np.zeros((0, 1))
        self.ids = state_classes(state)
        self.next_id = int(self.ids.max()) + 1 if len(self.ids) else 0
        self.opening = self.next_id  # ids below: states the session opened with
        #: Rows touched since their id was last resolved (``Session.touch`` appends, duplicates too).
        self.dirty: list[int] = []
        first = np.zeros(self.opening, dtype=np.int64)
        first[self.ids] = np.arange(len(self.ids))  # a row of every opening id (any: they are equal)
        #: A row's state bytes (its columns' bytes, joined) -> id. A session that opened with many
        #: states keeps them as one matrix instead, compared with a touched row's on a miss.
        self._keys: dict[bytes, int] = {}
        self._opening_states: np.ndarray | None = None
        if self.opening <= KEYED_OPENING:
            for i, row in enumerate(first.tolist()):
                self._keys[self._key(row)] = i
        else:
            self._opening_states = state[first]
        self.lookups = self.hits = self.skipped = 0  # shapes' group lookups (:meth:`worth_looking`)
        #: Dirty rows whose only change since their id was resolved is one placement: row -> (id before,
        #: the placement's effect); other dirty rows are in ``_unknown``.
        self._moves: dict[int, tuple[int, object]] = {}
        self._unknown: set[int] = set()
        #: (id before, effect) -> id after, learnt from resolved placements: a state and a placement
        #: determine the next state, and an id names one state, so a placed row's next id is a
        #: dictionary lookup instead of its state's bytes.
        self._transitions: dict[tuple[int, object], int] = {}

    def worth_looking(self) -> bool:
        """Whether a shape should look a row's group answer up: yes while lookups find one often
        enough; when most miss (a new state per placement: one cpu request per job), every
        ``SAMPLE``-th row only (the lookup costs a state key; only the cost depends on it)."""
        if self.lookups < 512 or 4 * self.hits >= self.lookups:
            return True
        self.skipped += 1
        return self.skipped % SAMPLE == 0

    def looked(self, found: bool) -> None:
        self.lookups += 1
        self.hits += found

    def touched(self, row: int) -> None:
        self.dirty.append(row)
        if self._moves:
            self._moves.pop(row, None)
        self._unknown.add(row)

    def placed(self, row: int, effect: object) -> None:
        """``row`` changed by a placement whose change to a row's state is a function of ``effect``
        (the request, non-zero request and status: ``Session.place``, including its handlers')."""
        self.dirty.append(row)
        if row in self._unknown:
            return
        if row in self._moves:
            del self._moves[row]
            self._unknown.add(row)
            return
        self._moves[row] = (self.ids.item(row), effect)  # ``item``: the Python int without a numpy scalar

    def current(self) -> np.ndarray:
        """Every row's id, the touched rows looked up again first."""
        if self.dirty:
            self._resolve()
        return self.ids

    def id_of(self, row: int) -> int:
        if self.dirty:
            self._resolve()
        return int(self.ids[row])

    def _resolve(self) -> None:
        dirty = self.dirty
        rows = dirty if len(dirty) == 1 else set(dirty)
        ids, keys, moves, transitions = self.ids, self._keys, self._moves, self._transitions
        for row in rows:
            move = moves.get(row)
            if move is not None:
                found = transitions.get(move)
                if found is not None:
                    ids[row] = found
                    continue
            key = self._key(row)
            found = keys.get(key)
            if found is None:
                found = self._opening_id(row)
                if len(keys) >= MAX_KEYS:
                    keys.clear()
                keys[key] = found
            ids[row] = found
            if move is not None:
                if len(transitions) >= MAX_KEYS:
                    transitions.clear()
                transitions[move] = found
        self.dirty = []
        moves.clear()
        self._unknown.clear()

    def _key(self, row: int) -> bytes:
        return b"".join([column[row].tobytes() for column in self._columns])

    def _opening_id(self, row: int) -> int:
        """The opening id of the state ``row`` is in (opening states kept as a matrix), else a new id."""
        if self._opening_states is not None:
            state = np.concatenate([column[row] for column in self._columns])
            same = (self._opening_states == state).all(axis=1)
            if same.any():
                return int(same.argmax())
        self.next_id += 1
        return self.next_id - 1


def state_columns(ssn: Session) -> list[np.ndarray]:
    """Views of the session arrays that make a row's state, each 2-D (rows x columns).

    Views, not copies: a row read from them is the row's current value."""
    nodes = ssn.nodes
    columns = [ssn.node_allocatable, ssn.idle, ssn.used, ssn.releasing, ssn.pipelined, ssn.nonzero_used,
               ssn.pod_count.reshape(-1, 1), nodes.max_pods.reshape(-1, 1)]
    columns += [extra.reshape(len(extra), -1) for extra in ssn.row_state]
    return columns


def node_groups(ssn: Session) -> NodeGroups:
    if ssn.node_classes is None:
        ssn.node_classes = NodeGroups(ssn)
    groups: NodeGroups = ssn.node_classes
    return groups


def state_classes(state: np.ndarray) -> np.ndarray:
    """A class id per row of ``state``: equal rows, equal ids (labels are arbitrary).

    ``np.unique(axis=0)`` compares rows field by field (~3 ms for 1,000 nodes, paid every session).
    Instead rows are grouped by one fixed projection (:func:`_projection`), and each row is then compared
    with its group's first row: exact whatever the projection, and a collision (two different
    rows, one projection) falls back to the row comparison."""
    if not len(state):
        return np.zeros(0, dtype=np.int64)
    weights = _projection(state.shape[1])
    _, first, ids = np.unique(state @ weights, return_index=True, return_inverse=True)
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if not np.array_equal(state, state[first[ids]]):
        _, ids = np.unique(state, axis=0, return_inverse=True)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    return ids


_PROJECTIONS: dict[int, np.ndarray] = {}


def _projection(width: int) -> np.ndarray:
    weights = _PROJECTIONS.get(width)
    if weights is None:
        # Square roots of 2, 3, 4, ... scaled apart: different rows rarely project alike, and any
        # fixed weights are exact (collisions are checked). Not numpy.random, whose import costs
        # an agent ~3 MiB.
        weights = _PROJECTIONS[width] = np.sqrt(np.arange(2, width + 2, dtype=np.float64)) * (1.0 + 1e-3 * np.arange(width))
    return weights
