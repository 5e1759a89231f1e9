"""``fgd``: fragmentation-aware GPU packing (the idea of Weng et al., USENIX ATC'23; docs/gpu-packing.md).

For a node n with free GPU fractions u_g, free CPU and memory, and a task type m (a distinct
request), the *fragment* F_n(m) is the free GPU capacity m cannot use: all of it when m does
not fit on n at all (CPU, memory, or no GPU with room); for a fractional request d, the GPUs
with u_g < d; for k whole GPUs, the partly used GPUs; for no GPU, all of it. The node's
expected fragmentation is F_n(M) = Σ_m p_m F_n(m) over the observed request distribution M
(``Snapshot.workload``: every pod the cache has seen).

Node order: a placement's Δ = F_n(M) after − before, taking for a one-GPU shared request the
GPU that gives the smallest Δ; score = ``fgd.weight`` × 100 × (−Δ) / G (G: the most GPUs of
any node). The same GPU is then chosen at placement (``DeviceLedger.shared_chooser``).
Vectorised over node rows and request classes; free fractions come from the device ledger
(``deviceshare``'s per-GPU accounting, which should be configured alongside).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.plugins.device_ledger import DeviceLedger, ledger_for
from member_agent.scheduler.plugins.gpu_demand import Demand, gpu_demand

NAME = "fgd"
ARGUMENTS = (
    Argument("fgd.weight", int, 1),
    # "pods": p_m is m's share of pods (the paper); "gpus": its share of requested GPUs.
    Argument("fgd.popularity", str, "pods"),
    # Adds this × the node's allocated GPU share after the placement (best-fit among equals).
    Argument("fgd.binpackWeight", int, 0),
    # Among nodes of equal Δ: "gpufit" prefers the node left with the smallest free GPU share,
    # then free CPU share; "bestfit" the free CPU share alone; "none" the visiting order alone.
    Argument("fgd.tieBreak", str, "none"),
)
MAX_NODE_SCORE = 100.0
EPS = 1e-9


class Workload:
    """M as arrays: per task type its CPU, memory and share p_m; per GPU-request class j the
    threshold below which a GPU is a fragment and how many such-or-better GPUs it needs."""

    def __init__(self, types: list[tuple[tuple[float, ...], int]], index: dict[str, int],
                 by_gpus: bool = False) -> None:
        classes: dict[tuple[int, float], int] = {}
        cls, cpu, mem, count = [], [], [], []
        for request, n in types:
            demand = gpu_demand(request, index)
            if not demand.any_gpu:
                key = (0, 0.0)  # no GPU: every free GPU is a fragment
            elif demand.shared:
                key = (1, max(demand.cores / 100.0, 0.01))
            else:
                key = (2, float(demand.gpus))
            cls.append(classes.setdefault(key, len(classes)))
            cpu.append(request[Dimensions.CPU])
            mem.append(request[Dimensions.MEMORY])
            gpus = (demand.cores / 100.0 if demand.shared else demand.gpus) if demand.any_gpu else 0.0
            count.append(n * max(gpus, 0.1) if by_gpus else n)
        total = sum(count) or 1
        p = np.asarray(count, dtype=np.float64) / total
        self.cpu = np.asarray(cpu)
        self.mem = np.asarray(mem)
        self.share = np.zeros((len(cls), len(classes)))  # (T, J): p_m in the column of m's class
        self.share[np.arange(len(cls)), cls] = p
        kinds = sorted(classes, key=classes.__getitem__)
        self.kind = np.array([k for k, _ in kinds], dtype=np.int64)
        self.value = np.array([v for _, v in kinds], dtype=np.float64)
        # A GPU is a fragment for class j when its free part is below thr_j.
        self.thr = np.where(self.kind == 1, self.value, np.where(self.kind == 2, 1.0, np.inf))
        self.p_total = float(p.sum())
        self._mass: dict[tuple[float, float], np.ndarray] = {}

    def mass(self, cpu_free: np.ndarray, mem_free: np.ndarray) -> np.ndarray:
        """(R, J): the share of each class whose CPU and memory fit each row (memoised per
        distinct free CPU/memory pair: nodes of one type in one state share the answer)."""
        # Distinct states first (np.unique on cpu + i·mem): the Python work is per distinct
        # free CPU/memory pair, not per row.
        keys, inverse = np.unique(cpu_free + 1j * mem_free, return_inverse=True)
        memo = self._mass
        pairs = list(zip(keys.real.tolist(), keys.imag.tolist(), strict=True))
        missing = [k for k in pairs if k not in memo]
        if missing:
            cpu = np.array([k[0] for k in missing])
            mem = np.array([k[1] for k in missing])
            fits = (self.cpu[None, :] <= cpu[:, None] + 0.1) & (self.mem[None, :] <= mem[:, None] + 0.1)
            rows = fits.astype(np.float64) @ self.share
            if len(memo) > 200_000:
                memo.clear()
            memo.update(zip(missing, rows, strict=True))
        table = np.array([memo[k] for k in pairs]).reshape(len(pairs), self.share.shape[1])
        return table[inverse.reshape(-1)]

    def gpu_fit(self, top: np.ndarray, full: np.ndarray) -> np.ndarray:
        """(…, J): whether a class's GPU demand fits, given the largest free part and whole free GPUs."""
        frac = top[..., None] >= self.value - EPS
        whole = full[..., None] >= self.value - EPS
        return np.where(self.kind == 1, frac, np.where(self.kind == 2, whole, True))

    def fragmentation(self, u: np.ndarray, cpu_free: np.ndarray, mem_free: np.ndarray) -> np.ndarray:
        """F_n(M) per row of ``u`` (R, G)."""
        s = u.sum(axis=1)
        a = (u[:, :, None] * (u[:, :, None] < self.thr - EPS)).sum(axis=1)  # (R, J)
        fit = self.gpu_fit(u.max(axis=1, initial=0.0), (u >= 1 - EPS).sum(axis=1))
        w = self.mass(cpu_free, mem_free)
        return s * self.p_total + (w * fit * (a - s[:, None])).sum(axis=1)  # type: ignore[no-any-return]


class FgdPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.weight = int(args["fgd.weight"])
        self.popularity = str(args["fgd.popularity"])
        self.by_gpus = self.popularity == "gpus"
        self.binpack = int(args["fgd.binpackWeight"])
        self.tie_break = str(args["fgd.tieBreak"])

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ledger: DeviceLedger = ledger_for(ssn)
        if self.popularity not in ("pods", "gpus"):
            ssn.warn(f"plugin {NAME}: argument fgd.popularity {self.popularity!r} is not one of pods, gpus; "
                     f"pods is used")
            self.by_gpus = False
        if not any(p.name == "deviceshare" for tier in ssn.conf.tiers for p in tier.plugins):
            ssn.warn(f"plugin {NAME}: deviceshare is not configured; GPUs are not checked one by one")
        types = list(ssn.snapshot.workload) or sorted(
            {(t.spec.request_list, 1) for job in ssn.jobs.values() for t in job.tasks})
        self.work = Workload(types, ssn.dims.index, self.by_gpus)
        topologies = [t for t in ssn.nodes.topology if t is not None]
        self.gpus = max((len(t.gpus) for t in topologies), default=0)
        if self.gpus == 0 or self.weight <= 0:
            return
        n = len(ssn.node_names)
        self._cached = np.zeros(n)
        self._fresh = np.zeros(n, dtype=bool)
        self._pos = len(ssn.changes)
        ssn.add(Point.NODE_ORDER, NAME, self._score, row=self._score_row)
        self.ledger.shared_chooser = self._choose

    def on_session_close(self, ssn: Session) -> None:
        self.ledger.shared_chooser = None

    # ------------------------------------------------------------------ node state
    def _free(self, rows: list[int]) -> np.ndarray:
        u = self.ledger.matrix().free_fraction(np.asarray(rows, dtype=np.int64))
        if u.shape[1] < self.gpus:
            u = np.pad(u, ((0, 0), (0, self.gpus - u.shape[1])))
        return u

    def _before(self, rows: np.ndarray, u: np.ndarray, cpu: np.ndarray, mem: np.ndarray) -> np.ndarray:
        """F_n(M) of the rows as they are now; kept per row until the session touches it."""
        ssn = self.ssn
        if self._pos < len(ssn.changes):
            self._fresh[np.asarray(ssn.changes[self._pos:], dtype=np.int64)] = False
            self._pos = len(ssn.changes)
        stale = ~self._fresh[rows]
        if stale.any():
            self._cached[rows[stale]] = self.work.fragmentation(u[stale], cpu[stale], mem[stale])
            self._fresh[rows[stale]] = True
        return self._cached[rows]  # type: ignore[no-any-return]

    def _deltas(self, task: TaskInfo, rows: list[int], placed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(R,) smallest Δ per row and (R, G) Δ per GPU candidate (inf: not a candidate).
        Rows the task cannot go to (CPU, memory or GPUs short) get Δ 0 without the work.
        ``placed``: the task's CPU and memory are already taken from the rows (the GPU is
        chosen after the session placed the task), so they are given back for the measure."""
        ssn, work = self.ssn, self.work
        index = np.asarray(rows, dtype=np.int64)
        req = task.spec.request_list
        idle = ssn.idle[index] + (np.asarray(req) if placed else 0.0)
        demand = self.ledger.demand(task)
        can = (idle[:, Dimensions.CPU] + 0.1 >= req[Dimensions.CPU]) & (idle[:, Dimensions.MEMORY] + 0.1 >= req[Dimensions.MEMORY])
        if demand.any_gpu:
            can &= self.ledger.matrix().fits(demand, index)
        delta = np.zeros(len(index))
        per_gpu = np.full((len(index), self.gpus), np.inf)
        if not can.any():
            return delta, per_gpu
        sub = index[can]
        u = self._free(sub.tolist())
        cpu, mem = idle[can, Dimensions.CPU], idle[can, Dimensions.MEMORY]
        before = work.fragmentation(u, cpu, mem) if placed else self._before(sub, u, cpu, mem)
        cpu2, mem2 = cpu - req[Dimensions.CPU], mem - req[Dimensions.MEMORY]
        if not demand.shared or demand.gpus != 1:
            d = work.fragmentation(self._take_whole(u, demand), cpu2, mem2) - before
            delta[can] = d
            per_gpu[can] = d[:, None]
            return delta, per_gpu
        delta[can], per_gpu[can] = self._shared_deltas(u, before, cpu2, mem2, max(demand.cores / 100.0, 0.01))
        return delta, per_gpu

    @staticmethod
    def _take_whole(u: np.ndarray, demand: Demand) -> np.ndarray:
        if demand.shared or demand.gpus == 0:
            return u
        after = u.copy()
        full = u >= 1 - EPS
        taken = np.cumsum(full, axis=1) <= demand.gpus  # the first k fully free GPUs of each row
        after[full & taken] = 0.0
        return after

    def _shared_deltas(self, u: np.ndarray, before: np.ndarray, cpu: np.ndarray, mem: np.ndarray,
                       d: float) -> tuple[np.ndarray, np.ndarray]:
        """Δ of putting ``d`` on each GPU g of each row: only u_g changes, so every term is
        updated from the row's totals rather than recomputed over all GPUs."""
        work = self.work
        thr = work.thr - EPS
        s = u.sum(axis=1)
        a = (u[:, :, None] * (u[:, :, None] < thr)).sum(axis=1)  # (R, J)
        new = u - d  # (R, G): u_g after the placement
        a2 = a[:, None, :] - u[:, :, None] * (u[:, :, None] < thr) + new[:, :, None] * (new[:, :, None] < thr)
        order = np.sort(u, axis=1)
        top1 = order[:, -1]
        top2 = order[:, -2] if u.shape[1] > 1 else np.zeros(len(u))
        first = np.argmax(u, axis=1)
        others = np.where(np.arange(u.shape[1])[None, :] == first[:, None], top2[:, None], top1[:, None])
        top_after = np.maximum(others, new)
        full_after = (u >= 1 - EPS).sum(axis=1)[:, None] - (u >= 1 - EPS)
        fit = work.gpu_fit(top_after, full_after)  # (R, G, J)
        w = work.mass(cpu, mem)[:, None, :]
        s2 = (s - d)[:, None]
        after = s2 * work.p_total + (w * fit * (a2 - s2[..., None])).sum(axis=2)
        per_gpu = np.where(u >= d - EPS, after - before[:, None], np.inf)
        best = per_gpu.min(axis=1, initial=np.inf)
        return np.where(np.isfinite(best), best, 0.0), per_gpu

    # ------------------------------------------------------------------ callbacks
    def _scale(self, delta: np.ndarray) -> np.ndarray:
        return -delta * MAX_NODE_SCORE * self.weight / max(1, self.gpus)

    def _gpu_share_after(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """(R,) the share of each row's GPUs allocated once the task is placed there."""
        demand = self.ledger.demand(task)
        count = np.maximum(self.ledger.matrix().count[rows], 1)
        free = self._free(rows.tolist()).sum(axis=1)
        amount = demand.cores / 100.0 if demand.shared else demand.gpus
        return (count - free + amount) / count  # type: ignore[no-any-return]

    def _score(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        if not self.ledger.demand(task).any_gpu and not task.spec.request_list[Dimensions.CPU]:
            return np.zeros(len(rows))
        delta, _ = self._deltas(task, rows.tolist())
        score = self._scale(delta)
        if self.binpack and self.ledger.demand(task).any_gpu:
            score = score + self.binpack * self._gpu_share_after(task, rows)
        if self.tie_break in ("bestfit", "gpufit"):
            # Rounded so float noise in Δ does not hide a tie; the term stays below one step.
            req = task.spec.request_list[Dimensions.CPU]
            idle = self.ssn.idle[rows, Dimensions.CPU] - req
            cap = np.maximum(self.ssn.node_allocatable[rows, Dimensions.CPU], 1.0)
            tie = 1.0 - idle / cap
            if self.tie_break == "gpufit":
                tie = 2.0 * self._gpu_share_after(task, rows) + 0.5 * tie
            score = np.round(score, 6) + 1e-7 * tie
        return score

    def _score_row(self, task: TaskInfo, row: int) -> float:
        return float(self._score(task, np.array([row]))[0])

    def _choose(self, row: int, task: TaskInfo, eligible: list[int]) -> int:
        """The eligible GPU of ``row`` with the smallest Δ (ties: the highest index, as HAMi)."""
        _, per_gpu = self._deltas(task, [row], placed=task.node == row)
        width = per_gpu.shape[1]
        return min(eligible, key=lambda g: (float(per_gpu[0, g]) if g < width else np.inf, -g))


def new(args: dict[str, Any]) -> FgdPlugin:
    return FgdPlugin(args)
