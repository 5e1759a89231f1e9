"""A shape's node evaluations (``framework/shape_cache.ShapeCache``) carried to the next session.

Consecutive sessions of one scheduler cache see the same nodes, and between two of them only
the rows where a pod was bound, ended or deleted change; yet every session built its shapes'
caches anew and evaluated hundreds of rows again (the replay: ~2,900 caches over 3,000 jobs, of
four distinct shapes). :class:`ShapeCarry` keeps the caches a session leaves and hands one to the
next session that asks for the same shape, every row whose state moved since marked not current.

Exactness. A cache's entries for a row (predicate code, fits Idle and FutureIdle, ``ok``, score)
are a function of the task's shape, the row's state and the session's constants, so a row whose
state is bit-for-bit the state it was evaluated in keeps its entries. What the carry compares:

* the session's constants, by identity (:func:`fingerprint`): the conf object (so every plugin
  argument), the dims, the node table's names, labels, taints, unschedulable flags, allocatable,
  maximum pods and device layouts (the cache hands every snapshot the same objects until a Node
  changes, and rebuilds them all, shape ids included, when one does), and the predicate and score
  callbacks. Only callbacks whose inputs are known are carried (``_CARRYABLE``): ``predicates``
  without inter-pod terms (labels, taints, the pod count and its in-session delta),
  ``deviceshare`` without NUMA pinning (a row's GPUs, compared as the ledger's ``GpuMatrix``),
  ``nodeorder``'s resource scores and ``binpack`` (by resources). Anything else: no carry;
* each row's state (:meth:`ShapeCarry._moved_rows`): Idle, Used, Releasing, Pipelined, the non-zero
  requests, the pod count and the per-row arrays by-state predicates registered (``row_state``:
  ``predicates``' pod delta, zeros at every opening) change in a session only on the rows it
  touches (``Session.changes``), and between two snapshots, with the device ledger's starting rows
  (the folded devices, the pods on the row and their roles), only on the rows the cache's events
  wrote (``row_journal``: every writer appends its row). So a row is current if neither session
  touched it and the journal does not name it. Where the journal cannot vouch (another cache, a
  rebuild, a snapshot handed out twice around a write) the two snapshots' accounting rows are
  compared as bytes (a ``-0.0`` counts as a move; an array the cache handed on unchanged is not
  compared) and the device ledger's ``GpuMatrix`` at the last session's end against now;
* the shape: a shape id is a builder's (``_Builder.shape_id``), so the carried cache also keeps
  the request, non-zero request, selector, affinity and tolerations it was made for
  (``ShapeCache.witness``) and is handed out only to a task with the same ones.

Per-session slots are reset (see :meth:`ShapeCarry._adopt`): the node-group answers and by-class
score memo (keyed by the session's group ids), the static-pass rows, the sorted feasible rows and
the position in ``Session.changes``; predicate codes are interned per session (``Reasons``), so
carried codes are translated through their texts. ``seen`` and ``rises`` travel: a row evaluated
in an earlier session counts as seen, so it turning feasible later is a rise (role marks are per
action and only ever on rows current when marked, so a carried row is never unseen and marked).
``density`` travels too (it only sizes chunks). Search plans, role failures and node groups live
in a ``NodeSearch`` or a session and are never carried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np

from member_agent.scheduler.framework.rows import unique_rows
from member_agent.scheduler.framework.shape_cache import shape_witness
from member_agent.scheduler.node_accounts import (
    ARRAYS as ACCOUNTS,  # a row's accounting, besides plugins' arrays
)
from member_agent.scheduler.plugins.device_ledger import LEDGER_KEY, DeviceLedger
from member_agent.scheduler.resident_devices import DEVICE_ARRAYS
from member_agent.scheduler.row_journal import journal_of

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session
    from member_agent.scheduler.framework.shape_cache import ShapeCache
    from member_agent.scheduler.framework.snapshot import Snapshot

#: Callbacks whose every input the carry compares (see the module's docstring), by module and name: the
#: agent imports only the plugins its conf names (tests/agent/test_agent_lazy_imports.py).
_PLUGINS = "member_agent.scheduler.plugins."
_PREDICATES = (_PLUGINS + "predicates", "PredicatesPlugin._predicate")
_CARRYABLE = frozenset({_PREDICATES, (_PLUGINS + "deviceshare", "DeviceSharePlugin._predicate"),
                        (_PLUGINS + "deviceshare", "DeviceSharePlugin._score"),
                        (_PLUGINS + "nodeorder", "NodeOrderPlugin._resource_scores"),
                        (_PLUGINS + "binpack", "BinpackPlugin._score")})
#: Caches kept from one session to the next, the most recently used (memory: ~20 bytes per row each).
MAX_CARRIED = 32
#: A carried cache with at most this many rows not current lists them in ``stale`` (its searches then
#: take the sorted feasible rows, re-evaluating those first); with more, spans are evaluated as met.
STALE_ROWS = 64

#: One carry per scheduler cache, found through the ledger it hands every snapshot (a weak key:
#: a dropped cache drops its carry). Snapshots built without a cache have no ledger and no carry.
_CARRIES: WeakKeyDictionary[Any, ShapeCarry] = WeakKeyDictionary()


def carry_for(snapshot: Snapshot) -> ShapeCarry | None:
    ledger = snapshot.ledger
    if ledger is None or not len(snapshot.nodes):
        return None
    carry = _CARRIES.get(ledger)
    if carry is None:
        carry = _CARRIES[ledger] = ShapeCarry()
    return carry


def fingerprint(ssn: Session) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The session's constants a shape's entries read (compared by identity), and its callbacks;
    None when a callback reads something the carry does not compare."""
    funcs = []
    for fn, _row in (*ssn.predicate_fns, *ssn.node_order_fns):
        func = getattr(fn, "__func__", None)
        name = (getattr(func, "__module__", None), getattr(func, "__qualname__", None))
        if name not in _CARRYABLE:
            return None
        if name == _PREDICATES and fn.__self__.inter_pod is not None:  # type: ignore[attr-defined]
            return None  # inter-pod terms read the pods on a row
        funcs.append(func)
    ledger: DeviceLedger | None = ssn.shared.get(LEDGER_KEY)
    if ledger is not None and (ledger.numa_enabled or ledger.shared_chooser is not None):
        return None
    nodes = ssn.nodes
    constants = (ssn.conf, ssn.dims, nodes.names, nodes.labels, nodes.taints, nodes.unschedulable,
                 nodes.allocatable, nodes.max_pods, nodes.topology)
    return constants, (*funcs, len(ssn.row_state), ledger is not None)


def _same(a: tuple[tuple[Any, ...], tuple[Any, ...]], b: tuple[tuple[Any, ...], tuple[Any, ...]]) -> bool:
    return all(x is y for x, y in zip(a[0], b[0], strict=True)) and a[1] == b[1]


def _devices(ssn: Session) -> list[np.ndarray] | None:
    ledger: DeviceLedger | None = ssn.shared.get(LEDGER_KEY)
    if ledger is None:
        return None
    matrix = ledger.matrix()
    return [getattr(matrix, name) for name in DEVICE_ARRAYS]


def _mark_differences(moved: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
    """Set ``moved`` on the rows where ``old`` and ``new`` differ, bit for bit (a ``-0.0`` too).

    Compared as 8-byte integers (or bytes) and found with one ``flatnonzero``: a reduction over the
    short second axis (``any(axis=1)``) cost several times more, a ``memoryview`` equality of equal
    arrays forty times more (it unpacks every byte)."""
    if old is new:
        return
    n = len(moved)
    if old.shape != new.shape or old.dtype != new.dtype:
        moved[:] = True
        return
    if not old.size:
        return
    kind = np.int64 if old.dtype.itemsize == 8 else np.uint8
    a = np.ascontiguousarray(old).reshape(n, -1).view(kind)
    b = np.ascontiguousarray(new).reshape(n, -1).view(kind)
    found = np.flatnonzero(a != b)
    if len(found):
        moved[found // a.shape[1]] = True


class _End:
    """What the last session left: its constants, its opening table, the rows it touched, its device
    rows at the end and the reason texts.

    A session's accounting rows and per-row plugin arrays change only through ``Session.touch`` and
    ``Session.place`` (``changes``), from the snapshot's read-only arrays (and zeros): at its end they
    are the snapshot's but on the touched rows. The device ledger's rows are built from several
    inputs (the cache's device arrays, resident and left-out pods, annotations), so they are compared
    as the ledger's matrix itself (no longer changed once the session is over)."""

    __slots__ = ("fingerprint", "nodes", "snapshot", "journal", "touched", "devices", "texts", "kinds")

    def __init__(self, ssn: Session, fp: tuple[tuple[Any, ...], tuple[Any, ...]]) -> None:
        self.fingerprint = fp
        self.nodes = ssn.nodes
        self.snapshot = ssn.snapshot  # the snapshot the cache stamped (row_journal.py)
        self.journal = journal_of(ssn.snapshot.ledger)
        n = len(ssn.node_names)
        self.touched = np.zeros(n, dtype=bool)
        if ssn.changes:
            self.touched[unique_rows(ssn.changes, n)] = True
        # Compared only when the cache's journal cannot name the rows its events wrote.
        self.devices = _devices(ssn) if self.journal is None else None
        self.texts = list(ssn.reasons.texts)
        self.kinds = list(ssn.reasons.kinds)


class ShapeCarry:
    """The shape caches one scheduler cache's last session left, for its next session."""

    def __init__(self) -> None:
        self.last: _End | None = None
        self.caches: dict[Any, ShapeCache] = {}  # shape -> cache, most recently used last
        # Per session (reset by :meth:`begin`):
        self._fingerprint: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        self._moved: np.ndarray | None = None  # rows whose state differs from the last end ...
        self._moved_pos = 0  # ... as of this position in the session's changes
        self._codes: np.ndarray | None = None  # the last session's reason codes -> this session's
        self._taken = False

    # ------------------------------------------------------------------ a session's two ends
    def begin(self, ssn: Session) -> None:
        """After the plugins registered their callbacks: serve ``ssn`` if its constants are the
        last session's (else forget what was kept)."""
        fp = self._fingerprint = fingerprint(ssn)
        self._moved, self._codes, self._taken = None, None, False
        # A session the carry cannot serve leaves what is kept alone (compared with the state anyway).
        if fp is not None and (self.last is None or not _same(fp, self.last.fingerprint)):
            self.last = None
            self.caches = {}
        ssn.shape_carry = self if fp is not None else None

    def end(self, ssn: Session) -> None:
        """After the actions: keep the session's caches, every row they hold current as of now."""
        fp = self._fingerprint
        self._fingerprint = None
        if fp is None or ssn.shape_carry is not self:
            return
        caches = ssn.shape_caches
        if not caches and not self._taken:  # no shape used: what is kept still describes the last end
            return
        kept: dict[Any, ShapeCache] = {}
        if self.last is not None:  # the ones this session did not use, brought up to now
            for key, cache in self.caches.items():
                if key not in caches:
                    self._bring(ssn, cache)
                    kept[key] = cache
        # Rows touched after a cache last read the changes hold entries older than the end: they are
        # among the rows this session touched (``_End.touched``), all of them not current in the next.
        for key, cache in caches.items():
            kept.pop(key, None)
            kept[key] = cache
        if len(kept) > MAX_CARRIED:
            kept = dict(list(kept.items())[-MAX_CARRIED:])
        self.caches = kept
        self.last = _End(ssn, fp)

    # ------------------------------------------------------------------ handing caches out
    def take(self, ssn: Session, task: TaskInfo) -> ShapeCache | None:
        """The kept cache of ``task``'s shape, current on every row whose state did not move, or None."""
        if self.last is None:
            return None
        cache = self.caches.pop(task.spec.shape, None)
        if cache is None or cache.witness != shape_witness(task):
            return None
        self._adopt(ssn, cache)
        self._taken = True
        return cache

    def _bring(self, ssn: Session, cache: ShapeCache) -> None:
        """Rows whose state moved since the last session's end not current, codes in ``ssn``'s numbers."""
        cache.evaluated &= ~self._moved_rows(ssn)
        codes = self._translation(ssn)
        if codes is not None:
            cache.codes = codes[cache.codes]

    def _adopt(self, ssn: Session, cache: ShapeCache) -> None:
        """Make a cache of the last session one of ``ssn``'s (see the module docstring for each slot)."""
        self._bring(ssn, cache)
        evaluated = cache.evaluated
        n = len(evaluated)
        cache.missing = n - int(np.count_nonzero(evaluated))
        # ``stale`` lists rows not current only when it lists them all (ShapeCache.ensure_span).
        cache.stale = set(np.flatnonzero(~evaluated).tolist()) if cache.missing <= STALE_ROWS else set()
        cache.pos = len(ssn.changes)
        cache._ok_rows = None
        cache.memo = None  # by group ids, the last session's
        cache.by_group = {}
        cache.static_ok = None

    def _moved_rows(self, ssn: Session) -> np.ndarray:
        """Rows whose state now differs from the last session's end (or may: touched since compared)."""
        last = self.last
        assert last is not None
        changes = ssn.changes
        if self._moved is None:
            moved = last.touched.copy()
            written = self._written(ssn)
            if written is not None:  # the cache's events name the rows they wrote: nothing to compare
                if written:
                    moved[unique_rows(written, len(moved))] = True
            else:
                self._compare(ssn, moved)
            if changes:  # the state above was the opening's: rows this session touched since
                moved[unique_rows(changes, len(moved))] = True
            self._moved, self._moved_pos = moved, len(changes)
        elif self._moved_pos < len(changes):
            moved = self._moved.copy()
            moved[unique_rows(changes[self._moved_pos:], len(moved))] = True
            return moved
        return self._moved

    def _written(self, ssn: Session) -> list[int] | None:
        """The rows the cache's events wrote between the last session's snapshot and this one's, or
        None when the journal cannot vouch (another cache, a rebuild, a table stamped twice)."""
        last = self.last
        assert last is not None
        journal = last.journal
        if journal is None or journal is not journal_of(ssn.snapshot.ledger):
            return None
        return journal.written(last.snapshot, ssn.snapshot)

    def _compare(self, ssn: Session, moved: np.ndarray) -> None:
        """Mark the rows whose accounting or devices differ between the last end and this opening."""
        last = self.last
        assert last is not None
        nodes = ssn.nodes
        for name in ACCOUNTS:  # the cache hands on an unchanged array: no comparison
            _mark_differences(moved, getattr(last.nodes, name), getattr(nodes, name))
        if ssn.shared.get(LEDGER_KEY) is not None:  # devices: the last end against now
            devices = _devices(ssn)
            if last.devices is None or devices is None:
                moved[:] = True
            else:
                for old, new in zip(last.devices, devices, strict=True):
                    _mark_differences(moved, old, new)

    def _translation(self, ssn: Session) -> np.ndarray | None:
        """The last session's reason codes as this session's (None: the same numbers)."""
        if self._codes is None:
            last = self.last
            assert last is not None
            reasons = ssn.reasons
            texts = reasons.texts
            same = len(texts) >= len(last.texts) and texts[:len(last.texts)] == last.texts
            self._codes = np.zeros(0, dtype=np.int32) if same else np.array(
                [reasons.code(text, kind) for text, kind in zip(last.texts, last.kinds, strict=True)], dtype=np.int32)
        return self._codes if len(self._codes) else None

