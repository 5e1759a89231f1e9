"""One scheduling session: the snapshot's mutable copy, the plugins' callbacks, dispatch.

Lifecycle (``reference/volcano.md`` §2): :func:`open_session` copies node accounting,
wraps jobs and tasks, builds every plugin of every tier from its arguments and lets it
register callbacks; actions then run against the session through the dispatchers below
(each a vote rule from :mod:`tiers`) and through :class:`Statement`; ``close`` (in
:mod:`member_agent.scheduler.framework.close`) turns the final state into a result.

Node accounting follows §1.3 exactly (Idle, Used, Releasing, Pipelined per dimension;
``FutureIdle = Idle + Releasing − Pipelined``). Every change to a node row is recorded with
:meth:`Session.touch`, which is what lets per-shape predicate and score caches refresh
only the rows that changed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from member_agent.scheduler.framework.affinity_shapes import affinity_shapes
from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.left_out import NOTHING, LeftOut, left_out
from member_agent.scheduler.framework.plugin_switches import allows, switch_answers
from member_agent.scheduler.framework.points import Point
from member_agent.scheduler.framework.session_votes import SessionVotes
from member_agent.scheduler.framework.snapshot import QueueSpec, Snapshot
from member_agent.scheduler.framework.status import Code, TaskStatus
from policies.scheduler_conf import PluginOption, SchedulerConf

S = TaskStatus
_PIPELINED = TaskStatus.PIPELINED  # a module constant: an enum member read through its class costs ~0.5 us
_ENDED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
LOG = logging.getLogger("caldera.scheduler")
_POINTS = tuple(Point)  # iterating the enum class runs Python code per member, twice a session


def klog_level(v: int) -> int:
    """The logging level of klog's ``V(v)``: V(0) is INFO, each step one below."""
    return logging.INFO - v


@dataclass(frozen=True)
class SessionOptions:
    """Scheduler flags that are not part of the configuration file (Volcano's CLI flags)."""

    #: ``--minimum-feasible-nodes``, ``--minimum-percentage-nodes-to-find``,
    #: ``--percentage-nodes-to-find`` (0: adaptive), with Volcano's defaults.
    minimum_feasible_nodes: int = 100
    minimum_percentage_nodes_to_find: int = 5
    percentage_nodes_to_find: int = 0
    #: Where the node search starts (Volcano's ``lastProcessedNodeIndex``): pass the previous
    #: session's ``CycleResult.last_processed_node_index`` so the start keeps rotating.
    last_processed_node_index: int = 0
    #: klog verbosity of the lines kept in the result (and sent to logging).
    verbosity: int = 0


class Reasons:
    """Interned predicate failure texts; a code is an int stored in per-node arrays."""

    def __init__(self) -> None:
        self.texts: list[str] = [""]
        self.kinds: list[Code] = [Code.SUCCESS]
        self._index: dict[str, int] = {"": 0}

    def code(self, text: str, kind: Code = Code.UNSCHEDULABLE) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.texts)
            self.texts.append(text)
            self.kinds.append(kind)
        return found


class Session(SessionVotes):
    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, uid: str, options: SessionOptions) -> None:
        self.snapshot = snapshot
        self.conf = conf
        self.uid = uid
        self.options = options
        self.dims = snapshot.dims
        nodes = snapshot.nodes
        self.nodes = nodes
        self.node_names = nodes.names
        self.node_allocatable = nodes.allocatable
        self.idle = nodes.idle.copy()
        self.used = nodes.used.copy()
        self.releasing = nodes.releasing.copy()
        self.pipelined = nodes.pipelined.copy()
        self.pod_count = nodes.pod_count.copy()
        self.nonzero_used = nodes.nonzero_used.copy()
        self.total: Vector = snapshot.total
        self.queues: dict[str, QueueSpec] = dict(snapshot.queues)
        self.jobs: dict[str, JobInfo] = {}
        #: row -> the tasks on that node, by key (a row's dict appears on first use: a thousand empty
        #: dicts per session were a fifth of opening one).
        self.node_tasks: defaultdict[int, dict[str, TaskInfo]] = defaultdict(dict)
        index = nodes.index
        #: The jobs this session only reports on (framework/quiescent.py, framework/left_out.py).
        self.left_out: LeftOut = left_out(conf, snapshot, uid)
        for spec in self.left_out.kept_in(snapshot.jobs):
            job = JobInfo(spec)
            # a comprehension (a pending task has no node), then the placed ones on their nodes
            tasks = [TaskInfo(tspec, job, index.get(tspec.node) if tspec.node else None, i)
                     for i, tspec in enumerate(spec.tasks)]
            for task in tasks:
                row = task.node
                if row is not None and task.status not in _ENDED:
                    self.node_tasks[row][task.spec.key] = task
            job.adopt(tasks)
            self.jobs[spec.uid] = job
        affinity_shapes([t for j in self.jobs.values() for t in j.tasks], snapshot.residents)
        self.reasons = Reasons()
        self.callbacks: dict[Point, list[list[tuple[str, Callable[..., Any]]]]] = {p: [] for p in _POINTS}
        self.handlers: list[tuple[str, Callable[[TaskInfo], None], Callable[[TaskInfo], None]]] = []
        self._on_allocate: tuple[Callable[[TaskInfo], None], ...] = ()  # the handlers' first halves, for place
        #: Point -> its callbacks of every tier in order (``_flat``), for the votes asked per task or per
        #: comparison, where reading the point's table and walking its tiers cost as much as the vote.
        self._flat_fns: dict[Point, tuple[Callable[..., Any], ...]] = {}
        self.plugins: dict[str, Any] = {}
        #: Per-session state several plugins share (e.g. the device ledger of deviceshare and
        #: numa-aware). Kept on the session so it dies with it; a module-level map keyed by the
        #: session kept every session alive through the value's back reference.
        self.shared: dict[str, Any] = {}
        #: Values several plugins compute from the snapshot's state while they open (e.g. the
        #: per-queue sums of proportion and overcommit, plugins/queue_usage.py): shared by them,
        #: dropped by :meth:`finish_open`, as actions then change the state they describe (a new dict
        #: then: a plugin that works a value out later, from the opening state, may hold the old one).
        self.open_memo: dict[str, Any] = {}
        #: Set by ``run_cycle`` when its first action is ``enqueue`` and no later one is: the state
        #: enqueue's first vote or admission sees is then the opening state (a plugin may work out
        #: what only enqueue's callbacks read when first asked, not in every session).
        self.enqueue_first = False
        self.changes: list[int] = []
        #: The rotating start of node searches, shared by every action (``NodeSearch.start``).
        self.node_cursor = options.last_processed_node_index % len(nodes) if len(nodes) else 0
        self.shape_caches: dict[Any, Any] = {}
        #: The caches the last session of this scheduler cache left (shape_carry.ShapeCarry), or None.
        self.shape_carry: Any = None
        self.node_index: Any = None  # framework.node_index.NodeIndex, built on first use
        self.node_classes: Any = None  # framework.node_groups.NodeGroups, built on first use
        self.row_state: list[np.ndarray] = []  # what by-state predicates read besides the accounting
        self.insufficient_codes: np.ndarray | None = None  # "Insufficient <dim>" code per dim
        self.resource_columns: Any = None  # node_search.ResourceColumns, built on first use
        self.logs: list[str] = []
        self.warnings: list[str] = []
        self.evictions: list[tuple[TaskInfo, str]] = []
        #: Seconds since the epoch, from the injected clock (set by ``open_session``).
        self.now: float = 0.0
        #: Filled by device/topology plugins at close: "ns/pod" -> {"gpus": [ids], ...} and
        #: "ns/pod" -> annotations the agent patches onto the pod before binding.
        self.device_allocations: dict[str, dict[str, list[int]]] = {}
        self.pod_annotations: dict[str, dict[str, str]] = {}
        self.enqueue_configured = "enqueue" in conf.actions
        self._opening: PluginOption | None = None
        self._opening_switches: dict[Point, bool] = {}  # the option's answers (plugin_switches)
        self.row_fns: dict[Callable[..., Any], Callable[..., Any]] = {}
        self.by_resources: set[Callable[..., Any]] = set()
        self.by_state: dict[Callable[..., Any], Callable[..., Any] | None] = {}  # predicate -> its static codes
        self.node_order_by_resources: list[bool] = []
        #: Every predicate by state, every scorer by resources: rows of a node group share a shape's evaluation.
        self.rows_by_state = False
        self.predicate_statics: list[Callable[..., Any]] = []
        self.predicate_fns: list[tuple[Callable[..., Any], Callable[..., Any] | None]] = []
        self.node_order_fns: list[tuple[Callable[..., Any], Callable[..., Any] | None]] = []
        self.batch_node_order_fns: list[Callable[..., Any]] = []

    # ------------------------------------------------------------------ logging
    def log(self, v: int, message: str) -> None:
        """A klog-style line at verbosity ``v`` (kept when ``v <= options.verbosity``)."""
        if v <= self.options.verbosity:
            self.logs.append(message)
            LOG.log(klog_level(v), message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.logs.append(message)
        LOG.warning(message)

    # ------------------------------------------------------------------ registration
    def begin_tier(self) -> None:
        for point in _POINTS:
            self.callbacks[point].append([])

    def open_plugin(self, option: PluginOption, plugin: Any) -> None:
        self._opening = option
        self._opening_switches = switch_answers(option)
        self.plugins[option.name] = plugin
        try:
            plugin.on_session_open(self)
        finally:
            self._opening = None

    def add(self, point: Point, plugin_name: str, fn: Callable[..., Any],
            row: Callable[..., Any] | None = None, by_resources: bool = False, by_state: bool = False,
            static: Callable[..., Any] | None = None) -> None:
        """Register ``fn`` on ``point`` for the plugin being opened (honours its switch).

        For PREDICATE and NODE_ORDER, ``row(task, row_index) -> value`` may give the same
        result for one node in scalar code; the session uses it to refresh a few rows.
        ``by_resources`` (NODE_ORDER): the value on a row depends only on the task and that
        row's allocatable, used, pipelined and non-zero requests, so rows in the same state
        share one evaluation (:mod:`node_classes`).
        ``by_state`` (PREDICATE): where ``static(task)`` (codes per row for labels, taints, name;
        none: 0) is 0, the code depends only on the task and the row's state (:mod:`node_groups`).
        """
        option = self._opening
        if option is not None and not allows(option, self._opening_switches, point):
            return
        self.callbacks[point][-1].append((plugin_name, fn))
        self._flat_fns.clear()  # flattened again on the next vote
        if row is not None:
            self.row_fns[fn] = row
        if by_resources:
            self.by_resources.add(fn)
        if by_state:
            self.by_state[fn] = static

    def add_row_state(self, values: np.ndarray) -> None:
        """A per-row array a by-state predicate reads (changed only on touched rows): part of a row's state."""
        self.row_state.append(values)

    def finish_open(self) -> None:
        """Flatten the node-level callbacks once (they are called for every task)."""
        self.open_memo = {}
        def flat(point: Point) -> list[tuple[Callable[..., Any], Callable[..., Any] | None]]:
            return [(fn, self.row_fns.get(fn)) for tier in self.callbacks[point] for _name, fn in tier]

        self.predicate_fns = flat(Point.PREDICATE)
        self.node_order_fns = flat(Point.NODE_ORDER)
        self.node_order_by_resources = [fn in self.by_resources for fn, _ in self.node_order_fns]
        self.batch_node_order_fns = [fn for fn, _ in flat(Point.BATCH_NODE_ORDER)]
        self.predicate_statics = [s for fn, _ in self.predicate_fns if (s := self.by_state.get(fn)) is not None]
        self.rows_by_state = all(fn in self.by_state for fn, _ in self.predicate_fns) and all(self.node_order_by_resources)

    def add_event_handler(self, plugin_name: str, on_allocate: Callable[[TaskInfo], None],
                          on_deallocate: Callable[[TaskInfo], None]) -> None:
        self.handlers.append((plugin_name, on_allocate, on_deallocate))
        self._on_allocate = tuple(on for _name, on, _off in self.handlers)

    def remove_event_handler(self, plugin_name: str, on_allocate: Callable[[TaskInfo], None],
                             on_deallocate: Callable[[TaskInfo], None]) -> None:
        """Undo :meth:`add_event_handler` (an action's index that follows the session while it runs)."""
        entry = (plugin_name, on_allocate, on_deallocate)
        if entry in self.handlers:
            self.handlers.remove(entry)
        self._on_allocate = tuple(on for _name, on, _off in self.handlers)

    def has(self, point: Point) -> bool:
        return any(self.callbacks[point])

    def job_queues(self) -> tuple[str, ...]:
        """Each queue that has a job in the snapshot (quiescent ones included), once, in the order
        its first job appears."""
        return self.snapshot.queue_order

    def dispose(self) -> None:
        """Break the session's reference cycles once its result is out (tasks and jobs point at
        each other, plugins at the session), so refcounting frees it at once rather than the
        cyclic collector much later: in a replay, sessions waiting for a collection were most of
        the peak memory."""
        for job in self.jobs.values():
            job.tasks = []
        self.jobs.clear()
        self.left_out = NOTHING
        self.node_tasks.clear()
        self.plugins.clear()
        self.callbacks.clear()
        self.handlers.clear()
        self._on_allocate = ()
        self._flat_fns.clear()
        self.shared.clear()
        self.shape_caches.clear()
        self.row_fns.clear()
        self.by_resources.clear()
        self.by_state.clear()
        self.predicate_fns, self.node_order_fns, self.batch_node_order_fns, self.predicate_statics = [], [], [], []
        self.evictions.clear()

    # ------------------------------------------------------------------ node accounting
    def future_idle(self, row: int) -> Vector:
        future: Vector = self.idle[row] + self.releasing[row] - self.pipelined[row]
        return future

    def touch(self, row: int) -> None:
        self.changes.append(row)
        if self.node_classes is not None:
            self.node_classes.touched(row)

    def place(self, task: TaskInfo, row: int, status: TaskStatus) -> None:
        """Put a pending task on a node as Allocated or Pipelined and tell the handlers."""
        spec = task.spec
        req = spec.request
        task.node = row
        task.job.set_status(task, status)
        if status == _PIPELINED:
            self.pipelined[row] += req
        else:
            idle, used = self.idle[row], self.used[row]  # views: ``a[row] -= b`` also copies the row back
            idle -= req
            used += req
            self.pod_count[row] += 1
            cpu, memory = spec.nonzero  # two scalar adds: a tuple operand is converted to an array per call
            nonzero_used = self.nonzero_used
            nonzero_used[row, 0] += cpu
            nonzero_used[row, 1] += memory
        self.node_tasks[row][spec.key] = task
        self.changes.append(row)
        groups = self.node_classes
        if groups is not None:
            groups.placed(row, (req.tobytes(), spec.nonzero, status))
        for on_allocate in self._on_allocate:
            on_allocate(task)

    def unplace(self, task: TaskInfo) -> None:
        """Undo :meth:`place`: the task is Pending again, off its node."""
        row = task.node
        assert row is not None
        req = task.spec.request
        if task.status == S.PIPELINED:
            self.pipelined[row] -= req
        else:
            self.idle[row] += req
            self.used[row] -= req
            self.pod_count[row] -= 1
            self.nonzero_used[row] -= task.spec.nonzero
        self.node_tasks[row].pop(task.key, None)
        self.touch(row)
        task.job.set_status(task, S.PENDING)
        task.node = None
        for _name, _, on_deallocate in self.handlers:
            on_deallocate(task)

    def mark_releasing(self, task: TaskInfo) -> None:
        """Evict in session: Releasing keeps Idle and Used but adds to Releasing."""
        row = task.node
        assert row is not None
        self.releasing[row] += task.spec.request
        task.job.set_status(task, S.RELEASING)
        self.touch(row)
        for _name, _, on_deallocate in self.handlers:
            on_deallocate(task)

    def unmark_releasing(self, task: TaskInfo) -> None:
        row = task.node
        assert row is not None
        self.releasing[row] -= task.spec.request
        task.job.set_status(task, S.RUNNING)
        self.touch(row)
        for _name, on_allocate, _ in self.handlers:
            on_allocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Send an Allocated task to the binder (status Binding; the node row is unchanged)."""
        task.job.set_status(task, S.BINDING)
        if self.options.verbosity >= 3:
            self._log_dispatch(task)

    def _log_dispatch(self, task: TaskInfo) -> None:
        self.log(3, f"Allocate task {task.key} to node {self.node_names[task.node or 0]}")

    def dispatch_all(self, tasks: list[TaskInfo]) -> None:
        """:meth:`dispatch` each of ``tasks`` in order; a run of one job's tasks changes the job's
        counters once (``JobInfo.set_statuses``: a commit sends a whole gang)."""
        at = 0
        while at < len(tasks):
            job = tasks[at].job
            end = at + 1
            while end < len(tasks) and tasks[end].job is job:
                end += 1
            job.set_statuses(tasks[at:end], S.BINDING)
            if self.options.verbosity >= 3:
                for task in tasks[at:end]:
                    self._log_dispatch(task)
            at = end

    def allocate_now(self, task: TaskInfo, row: int) -> None:
        """Non-transactional allocate (backfill): dispatch the whole job once it is ready."""
        self.place(task, row, S.ALLOCATED)
        if self.options.verbosity >= 3:
            self.log(3, f"Binding Task {task.key} to node {self.node_names[row]}")
        if self.job_ready(task.job):
            for sibling in task.job.tasks:
                if sibling.status == S.ALLOCATED:
                    self.dispatch(sibling)

    # ------------------------------------------------------------------ queue helpers
    def queue_jobs(self, queue: str) -> list[JobInfo]:
        return [j for j in self.jobs.values() if j.queue == queue]


def full_mask(n: int) -> np.ndarray:
    return np.ones(n, dtype=bool)
