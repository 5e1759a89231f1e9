"""Session-local shapes for tasks whose predicate results depend on inter-pod terms.

:func:`affinity_shapes` gives such a task (it has terms, or some term in the snapshot selects it)
a shape of its own, shared by every task of the same template and namespace, so tasks sharing a
shape still see the same predicate results. With no term anywhere nothing changes.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import TYPE_CHECKING, Any, Iterable

from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY, PodAffinityTerm

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.snapshot import TaskSpec


def distinct_terms(specs: Iterable[TaskSpec]) -> tuple[list[PodAffinityTerm], list[PodAffinityTerm]]:
    """Every distinct (affinity, anti-affinity) term of ``specs``, in first-seen order."""
    affinity: dict[PodAffinityTerm, None] = {}
    anti: dict[PodAffinityTerm, None] = {}
    for spec in specs:
        terms = spec.pod_affinity
        # the shared empty value (most pods) is falsy: an identity test spares its Python __bool__
        if terms is not NO_POD_AFFINITY and terms:
            affinity.update(dict.fromkeys(terms.affinity))
            anti.update(dict.fromkeys(terms.anti_affinity))
    return list(affinity), list(anti)


def affinity_shapes(tasks: list[TaskInfo], residents: Iterable[TaskSpec]) -> None:
    """Re-key the shape of every task whose predicate results depend on inter-pod terms.

    The new key is (builder shape, the set of snapshot terms that select the task): tasks of one
    template in one namespace share it, so per-shape work stays per template."""
    affinity, anti = distinct_terms(chain([t.spec for t in tasks], residents))
    terms = affinity + anti
    if not terms:
        return
    keys: dict[tuple[Any, ...], int] = {}
    selected: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, ...]] = {}
    for task in tasks:
        spec = task.spec
        sig = (spec.namespace, tuple(sorted(spec.labels.items())))
        matched = selected.get(sig)
        if matched is None:
            matched = selected[sig] = tuple(i for i, t in enumerate(terms) if t.matches(spec.namespace, spec.labels))
        if not matched and not spec.pod_affinity:
            continue
        key = (spec.shape, matched)
        shape = keys.setdefault(key, -(len(keys) + 1))  # negative: never a builder shape id
        task.spec = replace(spec, shape=shape)
