"""PriorityClass admission (Kubernetes' own rules for ``scheduling.k8s.io/v1``).

* the name is an RFC 1123 subdomain and the ``system-`` prefix is reserved for the built-in
  system classes;
* a user class's value is at most 1,000,000,000 (system classes go up to 2,000,000,000);
* ``value`` and ``preemptionPolicy`` cannot change on update;
* (online) at most one class is ``globalDefault``.
"""

from __future__ import annotations

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_object_name
from policies.errors import FieldError
from policies.models.scheduling_k8s import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_CRITICAL_PRIORITY,
    PriorityClass,
)

SYSTEM_PREFIX = "system-"
SYSTEM_CLASSES = {"system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
                  "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY}


class PriorityClassAdmitter:
    def mutate(self, obj: PriorityClass, ctx: AdmissionContext, creating: bool) -> PriorityClass:
        if creating and obj.preemption_policy is None:
            obj.preemption_policy = "PreemptLowerPriority"
        return obj

    def validate(self, obj: PriorityClass, old: PriorityClass | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        name = obj.metadata.name
        check_object_name(errors, name, "priorityclass")
        if name and name.startswith(SYSTEM_PREFIX):
            expected = SYSTEM_CLASSES.get(name)
            if expected is None:
                errors.append(FieldError("metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                                          f"reserved for system use only; known: "
                                                          f"{', '.join(sorted(SYSTEM_CLASSES))}"))
            elif obj.value != expected:
                errors.append(FieldError("value", f"value of {name} must be {expected}"))
        elif obj.value > HIGHEST_USER_DEFINABLE_PRIORITY:
            errors.append(FieldError("value", f"maximum allowed value of a user defined priority is "
                                              f"{HIGHEST_USER_DEFINABLE_PRIORITY}, got {obj.value}"))
        if old is not None:
            if obj.value != old.value:
                errors.append(FieldError("value", "may not be changed in an update"))
            if (obj.preemption_policy or "PreemptLowerPriority") != (old.preemption_policy or "PreemptLowerPriority"):
                errors.append(FieldError("preemptionPolicy", "may not be changed in an update"))
        if obj.global_default and ctx.online and ctx.list is not None:
            others = [str(pc.get("metadata", {}).get("name")) for pc in ctx.list("PriorityClass", None)
                      if pc.get("globalDefault") and pc.get("metadata", {}).get("name") != name]
            if others:
                errors.append(FieldError("globalDefault", f"PriorityClass {others[0]!r} is already marked as "
                                                          f"default; only one default can exist"))
        return errors


ADMITTERS: dict[str, Admitter] = {"PriorityClass": PriorityClassAdmitter()}
