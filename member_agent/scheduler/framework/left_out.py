"""What a session leaves out, kept across sessions: the quiescent jobs of successive snapshots.

:mod:`quiescent` says which jobs a session may leave out. Checking each job of the snapshot,
and writing for each what closing writes, was still work per job per session: in a long
replay most of a session, for jobs that had not changed since the last one. An unchanged job
keeps its :class:`JobSpec` object from one snapshot to the next, so :class:`QuiescentLedger`
compares a snapshot's specs with the last ones it saw *by identity* (set operations on ids,
done in C) and does per-job work only for the specs that came or went. It keeps

* the fragment of every spec, and of the eligible ones, merged, what closing copies into the
  result: pod owners, reports, the steady PodGroups;
* the sums plugins register with :meth:`QuiescentLedger.tally` (proportion's queue usage,
  ``plugins/queue_usage.py``), updated as eligible jobs come and go.

A snapshot carries its cache's ledger (``Snapshot.ledger``); one built afresh gets a ledger of
its own, filled from every job, which is the per-job walk the ledger otherwise saves.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, not_
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Protocol

from member_agent.scheduler.framework import quiescent
from member_agent.scheduler.framework.memo import LastOf
from member_agent.scheduler.framework.quiescent import Fragment, fragment

if TYPE_CHECKING:
    from member_agent.scheduler.framework.result import JobReport
    from member_agent.scheduler.framework.snapshot import JobSpec, Snapshot
    from policies.scheduler_conf import SchedulerConf

_UID = attrgetter("uid")


class Tally(Protocol):
    """A sum over the eligible jobs that the ledger keeps current."""

    def add(self, spec: JobSpec, found: Fragment) -> None: ...

    def remove(self, spec: JobSpec, found: Fragment) -> None: ...


class QuiescentLedger:
    """The fragments of the specs of the last snapshot seen, and sums over the eligible ones."""

    #: How many snapshots' changes :meth:`note` keeps (sessions skip snapshots now and then).
    DELTAS = 8

    def __init__(self) -> None:
        self._deltas: dict[int, tuple[tuple[JobSpec, ...], tuple[JobSpec, ...], list[JobSpec], list[JobSpec]]] = {}
        self._reset(None, None)

    def _reset(self, node_names: tuple[str, ...] | None, dims: Any) -> None:
        self.node_names = node_names
        self.dims = dims
        self._seen: tuple[JobSpec, ...] | None = None  # the job tuple the ledger describes
        self._specs: dict[int, JobSpec] = {}  # id -> spec: held, so the ids stay theirs
        self._found: dict[int, Fragment] = {}
        self._wrapped: dict[int, JobSpec] = {}  # id -> spec, the specs that are not eligible
        #: Whether the job tuple described was reached by the cache's notes: a cache's tuple is in
        #: uid order (its jobs are kept sorted by key, and a job's key is its spec's uid).
        self._in_uid_order = False
        self.fragments: dict[str, Fragment] = {}  # uid -> fragment, the eligible specs only
        self.owners: dict[str, str] = {}
        self.reports: dict[str, JobReport] = {}
        self.steady: set[str] = set()
        self.running: dict[str, str] = {}  # uid -> "Running", the PodGroup phase closing writes
        self.plain: dict[str, None] = {}  # uids whose only condition closing writes is gang's Scheduled
        self.kept: dict[str, tuple[dict[str, Any], ...]] = {}  # the others' conditions closing keeps
        self.with_terms = 0  # specs whose tasks carry inter-pod terms
        self.with_scored = 0  # specs whose tasks carry terms the InterPodAffinity score reads
        self.with_ids: dict[str, Fragment] = {}  # eligible, with old Unschedulable transitionIDs
        self._tallies: dict[Hashable, Tally] = {}
        self._removed = [0, 0]  # entries deleted since the dicts closing copies were rebuilt: jobs, pods

    def note(self, previous: tuple[JobSpec, ...], current: tuple[JobSpec, ...], removed: list[JobSpec],
             added: list[JobSpec]) -> None:
        """A cache's word that its job tuple went from ``previous`` to ``current`` by taking out
        ``removed`` and putting in ``added``: :meth:`update` then follows it rather than compare.
        ``current`` is in uid order (:meth:`wrapped_in_order` relies on it).
        Not kept before the first update (a conf that leaves nothing out never updates: an agent
        would hold the specs of finished jobs for nothing)."""
        if self._seen is None:
            return
        self._deltas[id(current)] = (current, previous, removed, added)  # the tuples held: ids stay theirs
        while len(self._deltas) > self.DELTAS:
            del self._deltas[next(iter(self._deltas))]

    def update(self, snapshot: Snapshot) -> None:
        """Make the ledger describe ``snapshot``'s jobs (work: the specs that changed)."""
        nodes = snapshot.nodes
        if nodes.names is not self.node_names or snapshot.dims is not self.dims:
            self._reset(nodes.names, snapshot.dims)  # fragments refer to rows of one node table
        jobs = snapshot.jobs
        if jobs is self._seen:
            return
        chain = self._chain(jobs)
        if chain is not None:
            for _current, _previous, removed, added in reversed(chain):
                for spec in removed:
                    self._remove(id(spec))
                for spec in added:
                    self._add(spec, nodes.index)
        else:
            self._compare(jobs, nodes.index)
        self._seen = jobs
        self._in_uid_order = chain is not None
        jobs_removed, pods_removed = self._removed
        if jobs_removed * 2 > len(self.running) or pods_removed * 2 > len(self.owners):
            self._compact()

    def _compact(self) -> None:
        """Rebuild the dicts closing copies each session, in their order. ``dict.copy`` clones a
        table in one block while at most a third of its slots hold deleted entries, and inserts
        item by item (~10x slower) past that; deleted slots go only when a dict grows."""
        self.owners, self.running, self.reports = dict(self.owners), dict(self.running), dict(self.reports)
        self._removed = [0, 0]

    def _chain(self, jobs: tuple[JobSpec, ...]) -> list[Any] | None:
        """The noted changes from the tuple the ledger describes to ``jobs``, newest first."""
        if self._seen is None:
            return None
        chain, cursor = [], jobs
        while cursor is not self._seen:
            delta = self._deltas.get(id(cursor))
            if delta is None or delta[0] is not cursor:
                return None
            chain.append(delta)
            cursor = delta[1]
        return chain

    def _compare(self, jobs: tuple[JobSpec, ...], index: Any) -> None:
        """Find the changes by identity: the specs seen and not in ``jobs`` go, the others come."""
        current = dict(zip(map(id, jobs), jobs, strict=True))
        known = self._specs
        for key in known.keys() - current.keys():
            self._remove(key)
        added = [current[key] for key in current.keys() - known.keys()]
        for spec in sorted(added, key=_UID):  # a set's order is the ids': sorted, so runs agree
            self._add(spec, index)

    def _add(self, spec: JobSpec, index: Any) -> None:
        found = fragment(spec, self.node_names or (), index)
        key = id(spec)
        self._specs[key] = spec
        self._found[key] = found
        self.with_terms += found.has_terms
        self.with_scored += found.scored
        if not found.eligible:
            self._wrapped[key] = spec
            return
        uid = found.uid
        self.fragments[uid] = found
        self.running[uid] = "Running"
        self.owners.update(found.owners)
        assert found.report is not None
        self.reports[uid] = found.report
        if found.steady:
            self.steady.add(uid)
        if found.kept_conditions:
            self.kept[uid] = found.kept_conditions
        else:
            self.plain[uid] = None
        if found.session_ids:
            self.with_ids[uid] = found
        for tally in self._tallies.values():
            tally.add(spec, found)

    def _remove(self, key: int) -> None:
        spec, found = self._specs.pop(key), self._found.pop(key)
        self.with_terms -= found.has_terms
        self.with_scored -= found.scored
        if not found.eligible:
            del self._wrapped[key]
            return
        uid = found.uid
        del self.fragments[uid], self.reports[uid], self.running[uid]
        for pod in found.owners:
            del self.owners[pod]
        self._removed[0] += 1
        self._removed[1] += len(found.owners)
        self.steady.discard(uid)
        self.plain.pop(uid, None)
        self.kept.pop(uid, None)
        self.with_ids.pop(uid, None)
        for tally in self._tallies.values():
            tally.remove(spec, found)

    def wrapped_in_order(self, jobs: tuple[JobSpec, ...]) -> list[JobSpec] | None:
        """The specs of ``jobs`` that are not eligible, in ``jobs``' order, when the ledger knows
        that order without a pass over ``jobs`` (the cache's tuple it describes: uid order);
        None otherwise. A replay's session wraps a few of a few hundred jobs."""
        if jobs is not self._seen or not self._in_uid_order:
            return None
        return sorted(self._wrapped.values(), key=_UID)

    def tally(self, key: Hashable, new: Callable[[], Tally]) -> Tally:
        """The tally kept under ``key``, made by ``new`` and filled from the eligible specs on first use."""
        kept = self._tallies.get(key)
        if kept is None:
            kept = self._tallies[key] = new()
            for spec_key, found in self._found.items():
                if found.eligible:
                    kept.add(self._specs[spec_key], found)
        return kept

    def forget(self, key: Hashable) -> None:
        """Drop a tally (its next use refills it from the specs)."""
        self._tallies.pop(key, None)


class LeftOut:
    """The jobs one session leaves out: the ledger's eligible jobs but those whose old
    Unschedulable condition carries this session's id (``clash``, wrapped as usual)."""

    def __init__(self, ledger: QuiescentLedger | None = None, clash: tuple[Fragment, ...] = ()) -> None:
        self.ledger = ledger
        self.clash = frozenset(f.uid for f in clash)
        if ledger is None:
            self.fragments: dict[str, Fragment] = {}
            self.running: dict[str, str] = {}
            self.owners: dict[str, str] = {}
            self.reports: dict[str, JobReport] = {}
            self.steady: set[str] = set()
            self.plain: dict[str, None] = {}
            self.kept: dict[str, tuple[dict[str, Any], ...]] = {}
            return
        self.fragments, self.running, self.owners, self.reports, self.steady, self.plain, self.kept = (
            ledger.fragments, ledger.running, ledger.owners, ledger.reports, ledger.steady, ledger.plain, ledger.kept)
        if clash:  # rare: copies without them
            self.fragments = {u: f for u, f in self.fragments.items() if u not in self.clash}
            self.running = {u: phase for u, phase in self.running.items() if u not in self.clash}
            self.reports = {u: r for u, r in self.reports.items() if u not in self.clash}
            self.steady = self.steady - self.clash
            self.plain = {u: None for u in self.plain if u not in self.clash}
            self.kept = {u: kept for u, kept in self.kept.items() if u not in self.clash}
            self.owners = {pod: u for pod, u in self.owners.items() if u not in self.clash}

    def kept_in(self, jobs: tuple[JobSpec, ...]) -> Iterable[JobSpec]:
        """The specs of ``jobs`` the session wraps, in order: those not left out."""
        fragments = self.fragments
        if not fragments:
            return jobs
        if self.ledger is not None and not self.clash:  # left out: every eligible spec
            wrapped = self.ledger.wrapped_in_order(jobs)
            if wrapped is not None:
                return [spec for spec in wrapped if spec.uid not in fragments]
        # one pass in C (map, not_, compress): a replay's session keeps a few of a few hundred specs
        return list(compress(jobs, map(not_, map(fragments.__contains__, map(_UID, jobs)))))

    def __bool__(self) -> bool:
        return bool(self.fragments)

    def __contains__(self, uid: object) -> bool:
        return uid in self.fragments


NOTHING = LeftOut()
#: Whether the last conf asked about lets sessions leave jobs out (a frozen conf: every session of a
#: replay or an agent asks about the same object).
_ALLOWS: LastOf[SchedulerConf, bool] = LastOf()


def left_out(conf: SchedulerConf, snapshot: Snapshot, session_uid: str) -> LeftOut:
    """The jobs a session over ``snapshot`` may leave out (:mod:`quiescent` says which)."""
    if not _ALLOWS.get(conf, quiescent.conf_allows) or any(t.pod_affinity for t in snapshot.residents):
        return NOTHING
    ledger = snapshot.ledger if snapshot.ledger is not None else QuiescentLedger()
    ledger.update(snapshot)
    if ledger.with_terms:  # a pending pod's term may select a quiescent job's pods
        return NOTHING
    clash = tuple(f for f in ledger.with_ids.values() if session_uid in f.session_ids)
    return LeftOut(ledger, clash)
