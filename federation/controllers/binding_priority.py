"""A binding's schedule priority from its policy's ``schedulePriority`` (Karmada ≥ 1.13): pure.

``spec.schedulePriority: {priorityClassSource, priorityClassName}`` on a PropagationPolicy or
ClusterPropagationPolicy resolves, when the binding is written, to the binding's
``spec.schedulePriority: {priority, preemptionPolicy}``; the scheduling queue orders by
``priority`` (higher first) and binding preemption only acts for ``PreemptLowerPriority``.

* ``KubePriorityClass``: the ``scheduling.k8s.io/v1`` PriorityClass named ``priorityClassName``;
* ``PodPriorityClass``: the class the resource template's pods name (a Volcano Job's
  ``spec.priorityClassName``, else its first task template's); no name there: the global default.

When the named class does not exist, the binding falls back as the binding-priority proposal says:
the global-default PriorityClass (with several, the smallest value), else priority 0 with
``preemptionPolicy: Never``; :attr:`ResolvedPriority.fallback` then says why, for an Event on the
binding. A policy without ``schedulePriority`` gives priority 0 / Never and no field on the binding.
A class's ``preemptionPolicy`` defaults to ``PreemptLowerPriority`` as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.models.karmada_policy import PRIORITY_CLASS_SOURCES

Obj = Mapping[str, Any]
DEFAULT_PRIORITY = 0
NEVER = "Never"
PREEMPT_LOWER = "PreemptLowerPriority"

__all__ = ["PRIORITY_CLASS_SOURCES", "ResolvedPriority", "resolve", "template_priority_class"]


@dataclass(frozen=True)
class ResolvedPriority:
    priority: int = DEFAULT_PRIORITY
    preemption_policy: str = NEVER
    #: the class the priority came from ("" when none)
    class_name: str = ""
    #: why the requested class was not used (for a Warning Event), "" when it was
    fallback: str = ""
    #: whether the policy asked for a schedule priority at all (the binding field is written then)
    requested: bool = False

    def spec(self) -> dict[str, Any] | None:
        """The binding's ``spec.schedulePriority`` (None: the policy set none)."""
        if not self.requested:
            return None
        return {"priority": self.priority, "preemptionPolicy": self.preemption_policy}

    @property
    def preempts(self) -> bool:
        return self.preemption_policy == PREEMPT_LOWER


def template_priority_class(job: Obj) -> str:
    """The PriorityClass the job's pods name: ``spec.priorityClassName``, else a task template's."""
    spec = job.get("spec") or {}
    if spec.get("priorityClassName"):
        return str(spec["priorityClassName"])
    for task in spec.get("tasks") or []:
        name = (((task.get("template") or {}).get("spec")) or {}).get("priorityClassName")
        if name:
            return str(name)
    return ""


def _global_default(classes: Mapping[str, Obj]) -> Obj | None:
    defaults = [pc for pc in classes.values() if pc.get("globalDefault")]
    return min(defaults, key=lambda pc: int(pc.get("value") or 0)) if defaults else None


def _from_class(pc: Obj, requested: bool, fallback: str = "") -> ResolvedPriority:
    return ResolvedPriority(int(pc.get("value") or 0), str(pc.get("preemptionPolicy") or PREEMPT_LOWER),
                            str((pc.get("metadata") or {}).get("name", "")), fallback, requested)


def resolve(policy: Obj | None, job: Obj, classes: Mapping[str, Obj]) -> ResolvedPriority:
    """The binding's schedule priority; ``classes`` maps PriorityClass name -> object."""
    wanted = ((policy or {}).get("spec") or {}).get("schedulePriority")
    if not wanted:
        return ResolvedPriority()
    source = wanted.get("priorityClassSource") or ""
    if source == "PodPriorityClass":
        name = template_priority_class(job)
        where = "the job's pod template"
    else:
        name = str(wanted.get("priorityClassName") or "")
        where = "schedulePriority"
    if source in PRIORITY_CLASS_SOURCES and name and name in classes:
        return _from_class(classes[name], True)
    if source not in PRIORITY_CLASS_SOURCES:  # admission refuses these; an old object may still carry one
        why = f"priorityClassSource {source!r} is not supported"
    elif name:
        why = f"PriorityClass {name!r} named by {where} does not exist"
    else:  # a pod template naming no class gets the global default, as pods do: nothing to report
        why = ""
    default = _global_default(classes)
    if default is not None:
        note = f"{why}: using the global default PriorityClass {default['metadata']['name']!r}" if why else ""
        return _from_class(default, True, note)
    note = f"{why}: using priority {DEFAULT_PRIORITY}, preemptionPolicy {NEVER}" if why else ""
    return ResolvedPriority(DEFAULT_PRIORITY, NEVER, "", note, True)
