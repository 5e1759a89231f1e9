"""The gang optimizer: feasible, as close as possible to Karmada's target, deterministic, cached."""

from __future__ import annotations

import itertools

import pytest
from placement_builders import PLACEMENT, cluster, gpu_nodes, job, load, request, task

from federation.placement.optimizer import Optimizer, Problem
from federation.placement.place import Placer
from federation.placement.request import ClusterAffinity, PlacementSpec, StaticWeight
from federation.placement.webster import webster

CASES = load(PLACEMENT / "optimizer-cases.yaml")[0]


def static_spec(weights: dict[str, int]) -> PlacementSpec:
    return PlacementSpec(strategy="StaticWeight",
                         static_weights=tuple(StaticWeight(ClusterAffinity(cluster_names=(n,)), w)
                                              for n, w in weights.items()))


def brute_force(target: dict[str, int], caps: dict[str, int], replicas: int, penalty: float) -> float:
    names = sorted(caps)
    best = float("inf")
    for xs in itertools.product(*(range(caps[n] + 1) for n in names)):
        if sum(xs) != replicas:
            continue
        cost = sum(abs(x - target.get(n, 0)) for n, x in zip(names, xs, strict=True))
        best = min(best, cost + penalty * sum(1 for x in xs if x))
    return best


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_optimizer_answer_is_feasible_and_closest(case: dict) -> None:
    clusters = tuple(cluster(n, *(gpu_nodes(c, g) for c, g in shapes)) for n, shapes in case["clusters"].items())
    caps = {n: sum(c * (g // case["gpus"]) for c, g in shapes) for n, shapes in case["clusters"].items()}
    j = job(task("worker", case["replicas"], gpus=case["gpus"]))
    placer = Placer()
    decision = placer.place(request(j, static_spec(case["weights"]), clusters))
    karmada = {n: r for n, r in webster(case["replicas"], case["weights"], j.uid).items() if r}
    assert any(karmada[n] > caps[n] for n in karmada), "the case must make Karmada's split infeasible"
    assert decision.ok and decision.path == "optimizer", decision.reason
    placed = decision.replicas()
    assert sum(placed.values()) == case["replicas"]
    assert all(placed[n] <= caps[n] for n in placed), (placed, caps)
    penalty = 0.5
    achieved = sum(abs(placed.get(n, 0) - karmada.get(n, 0)) for n in caps) + penalty * len(placed)
    assert achieved == pytest.approx(brute_force(karmada, caps, case["replicas"], penalty))
    again = Placer().place(request(j, static_spec(case["weights"]), clusters))
    assert again.replicas() == placed, "the optimizer's answer must be deterministic"


def test_failed_verification_adds_a_cut_and_solves_again() -> None:
    # cluster-b: two 8-GPU nodes. master 6 GPU + 2 workers of 5 GPU pass the summed-GPU bound
    # (16 <= 16) and the per-task bounds, but no packing exists: the first answer fails first-fit.
    clusters = (cluster("a", gpu_nodes(4, 8)), cluster("b", gpu_nodes(2, 8)))
    j = job(task("master", 1, gpus=6), task("worker", 2, gpus=5))
    decision = Placer().place(request(j, static_spec({"a": 1, "b": 100}), clusters))
    assert decision.ok, decision.reason
    assert decision.karmada_split == {"b": 3}
    assert decision.optimizer["cuts"] >= 1
    assert decision.replicas() == {"a": 1, "b": 2}
    assert sum(s.min_available for s in decision.shares.values()) == j.min_available


def test_no_feasible_division_is_a_divide_failure_with_the_solver_status() -> None:
    # per task there is room (2 slots for 6-GPU pods), but each 8-GPU node takes only one of the
    # three 6-GPU pods: the summed-resource rows make the MILP infeasible
    clusters = (cluster("a", gpu_nodes(1, 8)), cluster("b", gpu_nodes(1, 8)))
    j = job(task("master", 1, gpus=6), task("worker", 2, gpus=6))
    decision = Placer().place(request(j, static_spec({"a": 1, "b": 1}), clusters))
    assert not decision.ok and decision.failure is not None
    assert decision.failure.step == "divide"
    assert "solver status 2" in decision.failure.reason
    assert decision.optimizer["status"] == 2


def test_short_capacity_is_reported_without_calling_the_solver() -> None:
    clusters = (cluster("a", gpu_nodes(1, 8)), cluster("b", gpu_nodes(1, 4)))
    placer = Placer()
    decision = placer.place(request(job(task("worker", 4, gpus=8)), static_spec({"a": 1, "b": 1}), clusters))
    assert decision.failure is not None and decision.failure.step == "divide"
    assert "capacity is short: 1 worker pods fit" in decision.failure.reason
    assert "a fits worker×1" in decision.failure.reason and "b fits worker×0" in decision.failure.reason
    assert placer.optimizer.calls == 0


def test_solutions_are_cached_by_problem() -> None:
    optimizer = Optimizer()
    problem = Problem(tasks=("w",), replicas=(5,), clusters=("a", "b"), target=(4.0, 1.0), estimate=((2, 9),))
    first, cached_first = optimizer.solve(problem)
    second, cached_second = optimizer.solve(problem)
    assert (cached_first, cached_second) == (False, True)
    assert first == second and first.x == ((2, 3),)
    assert optimizer.calls == 1 and optimizer.hits == 1


def test_cluster_spread_bounds_the_clusters_used() -> None:
    problem = Problem(tasks=("w",), replicas=(6,), clusters=("a", "b", "c"), target=(2.0, 2.0, 2.0),
                      estimate=((6, 6, 6),), groups=(1, 1))
    solution, _ = Optimizer().solve(problem)
    assert solution.x is not None and sum(1 for v in solution.x[0] if v) == 1
