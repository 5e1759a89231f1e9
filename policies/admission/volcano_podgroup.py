"""Volcano PodGroup admission (volcano.md §10.4).

Mutating: an empty queue becomes ``default`` (the CRD default); a ``default`` queue is
replaced by the namespace's ``scheduling.volcano.sh/queue-name`` annotation when the
namespace is known. Validating: counts non-negative, minResources non-negative, network
topology tiers not both set, and (online, CREATE) the queue exists and is Open.
"""

from __future__ import annotations

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_non_negative_resources, check_object_name, key_path
from policies.admission.pod_template import counted_quantity_error
from policies.admission.priority_refs import check_priority_class
from policies.admission.queues import check_queue_accepts
from policies.admission.volcano_job import validate_network_topology
from policies.errors import FieldError
from policies.models.volcano_scheduling import PodGroup
from policies.quantity import Quantity

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_QUEUE = "default"


class PodGroupAdmitter:
    def mutate(self, obj: PodGroup, ctx: AdmissionContext, creating: bool) -> PodGroup:
        if not creating:
            return obj
        if not obj.spec.queue:
            obj.spec.queue = DEFAULT_QUEUE
        if obj.spec.queue == DEFAULT_QUEUE and ctx.online and ctx.get is not None and obj.metadata.namespace:
            namespace = ctx.get("Namespace", None, obj.metadata.namespace) or {}
            queue = (namespace.get("metadata", {}).get("annotations") or {}).get(QUEUE_ANNOTATION)
            if queue:
                obj.spec.queue = queue
        return obj

    def validate(self, obj: PodGroup, old: PodGroup | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        spec = obj.spec
        check_object_name(errors, obj.metadata.name, "podgroup")
        if spec.min_member is not None and spec.min_member < 0:
            errors.append(FieldError("spec.minMember", "'minMember' must be >= 0"))
        for task, count in (spec.min_task_member or {}).items():
            if count < 0:
                errors.append(FieldError(key_path("spec.minTaskMember", task), f"minTaskMember of task {task!r} "
                                                                               f"must be >= 0"))
        check_non_negative_resources(errors, spec.min_resources, "spec.minResources")
        for resource, value in (spec.min_resources or {}).items():
            problem = counted_quantity_error(resource, Quantity.parse(value))
            if problem:
                errors.append(FieldError(key_path("spec.minResources", resource), f"Invalid value: {value!r}: {problem}"))
        errors.extend(validate_network_topology(spec.network_topology, "spec.networkTopology"))
        for index, sub in enumerate(spec.sub_group_policy or []):
            at = f"spec.subGroupPolicy[{index}]"
            errors.extend(validate_network_topology(sub.network_topology, f"{at}.networkTopology"))
            if sub.sub_group_size is not None and sub.sub_group_size < 1:
                errors.append(FieldError(f"{at}.subGroupSize", "'subGroupSize' must be >= 1"))
            if sub.min_sub_groups is not None and sub.min_sub_groups < 0:
                errors.append(FieldError(f"{at}.minSubGroups", "'minSubGroups' must be >= 0"))
        if old is None and spec.queue:
            errors.extend(check_queue_accepts(ctx, spec.queue, "spec.queue", "PodGroup", leaf_only=False))
        if old is None or spec.priority_class_name != old.spec.priority_class_name:
            errors.extend(check_priority_class(ctx, spec.priority_class_name, "spec.priorityClassName"))
        return errors


ADMITTERS: dict[str, Admitter] = {"PodGroup": PodGroupAdmitter()}
