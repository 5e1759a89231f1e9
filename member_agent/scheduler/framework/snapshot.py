"""The immutable view one session reads: nodes as numpy rows, tasks, jobs, queues.

A :class:`Snapshot` is built once (``builder.build_snapshot``) from Kubernetes objects and
never mutated; a session copies the node accounting arrays it changes. Arrays are
read-only so an accidental write fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any, Mapping

import numpy as np

from member_agent.scheduler.framework.dims import Dimensions, Vector
from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY, PodAffinity
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import NO_EXTRAS, NodeTopology, PodExtras
from policies.k8s.node_selector import NodeSelectorTerm as NodeSelectorTerm  # re-exported for the plugins
from policies.k8s.tolerations import Taint as Taint
from policies.k8s.tolerations import Toleration as Toleration


@dataclass(frozen=True)
class NodeAffinity:
    required: tuple[NodeSelectorTerm, ...] | None = None  # OR of terms; None = no requirement
    preferred: tuple[tuple[int, NodeSelectorTerm], ...] = ()


@dataclass(frozen=True)
class NodeTable:
    """Every node of the snapshot, one row each, in the cache's stable order (by name)."""

    names: tuple[str, ...]
    labels: tuple[Mapping[str, str], ...]
    taints: tuple[tuple[Taint, ...], ...]
    unschedulable: np.ndarray  # (N,) bool
    allocatable: np.ndarray  # (N, D)
    max_pods: np.ndarray  # (N,) int: status.allocatable.pods
    # Accounting of the pods already on the nodes (volcano.md §1.3).
    idle: np.ndarray
    used: np.ndarray
    releasing: np.ndarray
    pipelined: np.ndarray
    pod_count: np.ndarray  # (N,) int
    nonzero_used: np.ndarray  # (N, 2) cpu/memory with the kube-scheduler non-zero defaults
    index: Mapping[str, int] = field(default_factory=dict)
    #: Per row: NUMA / GPU layout (``caldera.io/topology`` or GFD labels), None when unknown.
    topology: tuple[NodeTopology | None, ...] = ()
    #: Per row: ``status.images`` as image name -> size in bytes (the ImageLocality score).
    images: tuple[Mapping[str, int], ...] = ()
    #: Whether any row lists images (None: not known, read from ``images``). Found once per node
    #: layout: the cache's snapshots share it, so a session does not walk a thousand empty maps.
    lists_images: bool | None = None

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class TaskSpec:
    """One pod as the scheduler sees it."""

    uid: str
    name: str
    namespace: str
    job: str  # "<ns>/<podgroup>" or "" when the pod has no group
    role: str
    status: TaskStatus
    priority: int
    request: Vector  # InitResreq == Resreq, includes pods: 1
    nonzero: tuple[float, float]  # cpu/memory request with kube-scheduler non-zero defaults
    node: str | None
    node_selector: Mapping[str, str]
    affinity: NodeAffinity
    tolerations: tuple[Toleration, ...]
    creation: float
    nominated_node: str
    best_effort: bool
    priority_class_name: str
    preemptable: bool
    gated: bool
    shape: int  # equal for pods of one template (same request, selector, affinity, tolerations)
    request_list: tuple[float, ...] = ()  # ``request`` as Python floats (scalar hot paths)
    requested_dims: tuple[int, ...] = ()  # dims with a positive request, ``pods`` excluded
    extras: PodExtras = NO_EXTRAS  # annotations, QoS, preemptionPolicy (framework/topology.py)
    labels: Mapping[str, str] = field(default_factory=dict)  # metadata.labels (inter-pod terms select on them)
    pod_affinity: PodAffinity = NO_POD_AFFINITY  # required inter-pod terms (framework/pod_affinity.py)

    #: "<namespace>/<name>", set once at construction (a frozen dataclass allows it through
    #: ``object.__setattr__``): read several times per task per session, and a spec lives across
    #: many sessions, so a plain attribute beats a cached property's first-read machinery.
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")


@dataclass(frozen=True)
class JobSpec:
    """A PodGroup and its pods."""

    uid: str  # "<ns>/<name>"
    name: str
    namespace: str
    queue: str
    min_available: int
    min_task_member: Mapping[str, int]
    min_resources: Vector | None
    priority_class_name: str
    priority: int
    creation: float
    phase: str
    conditions: tuple[Mapping[str, Any], ...]
    tasks: tuple[TaskSpec, ...]
    preemptable: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: ``spec.networkTopology`` ({mode, highestTierAllowed, highestTierName}) and
    #: ``spec.subGroupPolicy`` as written (plugins/network_topology_aware.py reads them).
    network_topology: Mapping[str, Any] | None = None
    sub_group_policy: tuple[Mapping[str, Any], ...] = ()
    #: Values derived from this spec alone (its tasks' counters and usage at their snapshot
    #: statuses), computed by the first session that needs them and reused by every later one:
    #: an unchanged job keeps its JobSpec object across snapshots, so a session's per-job
    #: opening work is paid once per change of the job, not once per session. Not an init field,
    #: so ``dataclasses.replace`` gives the new spec a memo of its own.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)


@dataclass(frozen=True)
class QueueSpec:
    name: str
    weight: int
    capability: Mapping[str, float] | None
    guarantee: Mapping[str, float]
    deserved: Mapping[str, float]
    reclaimable: bool
    parent: str
    state: str
    priority: int
    creation: float
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: Values derived from this spec alone (proportion's guarantee and capability vectors), as
    #: ``JobSpec.memo``: the cache keeps an unchanged Queue's spec across snapshots.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)


@dataclass(frozen=True)
class DeviceUsage:
    """Per physical GPU of one node: memory (GB) and cores (%) in use, holders, exclusivity."""

    memory_used: tuple[float, ...]
    cores_used: tuple[float, ...]
    holders: tuple[int, ...]
    exclusive: tuple[bool, ...]


@dataclass(frozen=True)
class DeviceArrays:
    """``device_usage`` of every node as (nodes × GPUs) arrays (the cache keeps them current)."""

    count: np.ndarray  # (N,) GPUs per node
    memory: np.ndarray  # (N, G) GB per GPU
    memory_used: np.ndarray
    cores_used: np.ndarray
    holders: np.ndarray
    exclusive: np.ndarray


_QUEUE = attrgetter("queue")


@dataclass(frozen=True)
class Snapshot:
    dims: Dimensions
    nodes: NodeTable
    jobs: tuple[JobSpec, ...]
    queues: Mapping[str, QueueSpec]
    priority_classes: Mapping[str, int]
    #: Objects that could not take part (missing queue, podgroup or node), one line each.
    problems: tuple[str, ...] = ()
    total: Vector = field(default_factory=lambda: np.zeros(3))
    #: Pods that occupy a node but belong to no job here (no PodGroup and not pending, another
    #: scheduler's, a missing PodGroup or queue). Their resources are already in the node
    #: accounting; device plugins read them so the GPUs they hold count too.
    residents: tuple[TaskSpec, ...] = ()
    #: Per row, GPU use of pods folded into the node by the incremental cache (residents whose
    #: ``volcano.sh/gpu-index`` is known), or None. Device plugins start from it.
    device_usage: tuple[DeviceUsage | None, ...] = ()
    #: The observed request distribution: (request vector as a tuple, number of pods seen),
    #: one entry per distinct request (for fragmentation-aware scoring, plugins/fgd.py).
    workload: tuple[tuple[tuple[float, ...], int], ...] = ()
    device_arrays: DeviceArrays | None = None
    #: The cache's :class:`left_out.QuiescentLedger`, shared by its successive snapshots (None:
    #: a session makes one of its own).
    ledger: Any = field(default=None, compare=False, repr=False)
    #: The HyperNode tree (framework/hypernodes.py ``HyperNodeTree``), None without HyperNodes:
    #: then nothing in the session looks at network topology.
    topology: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def queue_order(self) -> tuple[str, ...]:
        """Each queue that has a job here, once, in the order its first job appears (read by
        several plugins and actions each session; kept in the instance dict)."""
        return tuple(dict.fromkeys(map(_QUEUE, self.jobs)))

    def know_queue_order(self, order: tuple[str, ...]) -> None:
        """Set :attr:`queue_order` from a source that keeps it (the incremental cache), so it is
        not walked for; ``dataclasses.replace`` gives a new instance, which walks again."""
        self.__dict__["queue_order"] = order

    @property
    def task_count(self) -> int:
        return sum(len(j.tasks) for j in self.jobs)
