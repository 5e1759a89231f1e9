"""The Kubernetes PodTemplate rules a Volcano task template must pass (a useful subset).

Volcano runs the full Kubernetes PodTemplate validation on every task template; this covers
the rules a job author actually trips on: container names (RFC 1123 labels, unique across
containers and init containers), volume mounts naming a volume of the pod, unique volume
names, container ports in range, non-negative quantities, requests not above limits, and
well-formed tolerations. A template without containers is accepted (the seed writes
templates that only set ``priorityClassName``).
"""

from __future__ import annotations

from typing import Any, Optional

from policies.admission.names import check_non_negative_resources, dns1123_label_error, key_path
from policies.errors import FieldError
from policies.k8s import label_selector, node_selector, tolerations
from policies.models.core import Container, PodSpec
from policies.quantity import MAX_QUANTITY, Quantity


def validate_pod_spec(spec: Optional[PodSpec], path: str) -> list[FieldError]:
    """Every broken rule of a pod spec at ``path`` (``spec.tasks[0].template.spec``)."""
    errors: list[FieldError] = []
    if spec is None:
        return errors
    volumes: dict[str, int] = {}
    for index, volume in enumerate(spec.volumes or []):
        if volume.name in volumes:
            errors.append(FieldError(f"{path}.volumes[{index}].name", f"duplicate volume name {volume.name!r} "
                                                                      f"(also {path}.volumes[{volumes[volume.name]}])"))
        volumes.setdefault(volume.name, index)
    seen: dict[str, str] = {}
    for field, containers in (("initContainers", spec.init_containers), ("containers", spec.containers)):
        for index, container in enumerate(containers or []):
            at = f"{path}.{field}[{index}]"
            for j, mount in enumerate(container.volume_mounts or []):
                if mount.name not in volumes:
                    errors.append(FieldError(f"{at}.volumeMounts[{j}].name",
                                             f"volume {mount.name!r} not found in {path}.volumes"))
            for j, port in enumerate(container.ports or []):
                if not 1 <= port.container_port <= 65535:
                    errors.append(FieldError(f"{at}.ports[{j}].containerPort",
                                             f"{port.container_port} must be between 1 and 65535, inclusive"))
            problem = dns1123_label_error(container.name)
            if problem:
                errors.append(FieldError(f"{at}.name", f"container name {problem}"))
            elif container.name in seen:
                errors.append(FieldError(f"{at}.name", f"duplicate container name {container.name!r} "
                                                       f"(also {seen[container.name]})"))
            else:
                seen[container.name] = at
            errors.extend(_container_resources(container, f"{at}.resources"))
    check_non_negative_resources(errors, spec.overhead, f"{path}.overhead")
    if spec.affinity is not None:
        errors += validate_affinity(spec.affinity.model_dump(by_alias=True, exclude_none=True), f"{path}.affinity")
    for index, toleration in enumerate(spec.tolerations or []):
        errors += tolerations.validate(toleration.model_dump(by_alias=True, exclude_none=True),
                                       f"{path}.tolerations[{index}]")
    return errors


def validate_affinity(affinity: dict[str, Any], path: str) -> list[FieldError]:
    """Node affinity terms (Gt/Lt take one integer) and pod (anti-)affinity label selectors (an
    unknown operator is refused here, never read as a match or a miss later)."""
    errors: list[FieldError] = []
    node = affinity.get("nodeAffinity") or {}
    at = f"{path}.nodeAffinity"
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        errors += node_selector.validate_term(term, f"{at}.requiredDuringSchedulingIgnoredDuringExecution"
                                                    f".nodeSelectorTerms[{i}]")
    for i, preferred in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
        errors += node_selector.validate_term(preferred.get("preference") or {},
                                              f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference")
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(kind) or {}
        at = f"{path}.{kind}"
        terms = [(f"{at}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", t)
                 for i, t in enumerate(pods.get("requiredDuringSchedulingIgnoredDuringExecution") or ())]
        terms += [(f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm",
                   w.get("podAffinityTerm") or {})
                  for i, w in enumerate(pods.get("preferredDuringSchedulingIgnoredDuringExecution") or ())]
        for term_path, term in terms:
            for name in ("labelSelector", "namespaceSelector"):
                errors += label_selector.validate(term.get(name), f"{term_path}.{name}")
    return errors


def _container_resources(container: Container, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    resources = container.resources
    if resources is None:
        return errors
    check_non_negative_resources(errors, resources.limits, f"{path}.limits")
    check_non_negative_resources(errors, resources.requests, f"{path}.requests")
    limits = resources.limits or {}
    for field, values in (("limits", limits), ("requests", resources.requests or {})):
        for name, value in values.items():
            problem = counted_quantity_error(name, Quantity.parse(value))
            if problem:
                errors.append(FieldError(key_path(f"{path}.{field}", name), f"Invalid value: {value!r}: {problem}"))
    for name, request in (resources.requests or {}).items():
        if name not in limits:
            if is_extended_resource(name):
                # Kubernetes: a non-overcommitable resource must name its limit (the request is that limit).
                errors.append(FieldError(key_path(f"{path}.limits", name),
                                         "Required value: Limit must be set for non overcommitable resources"))
            continue
        wanted, limit = Quantity.parse(request).value, Quantity.parse(limits[name]).value
        if is_extended_resource(name) and wanted != limit:
            # Kubernetes: extended resources cannot be overcommitted, so a request is its limit.
            errors.append(FieldError(key_path(f"{path}.requests", name),
                                     f"Invalid value: {request!r}: must be equal to {name} limit of {limits[name]!r}"))
        elif wanted > limit:
            errors.append(FieldError(key_path(f"{path}.requests", name),
                                     f"request {request!r} must be less than or equal to {name} limit "
                                     f"{limits[name]!r}"))
    return errors


def is_extended_resource(name: str) -> bool:
    """Kubernetes' rule: a resource name with a domain outside ``kubernetes.io`` (``nvidia.com/gpu``)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def counted_quantity_error(name: str, quantity: Quantity) -> Optional[str]:
    """Extended resources are whole devices; they and cpu are counted in milli-units, which must fit."""
    if is_extended_resource(name) and quantity.milli_value() % 1000 != 0:
        return "must be an integer"
    if (is_extended_resource(name) or name == "cpu") and abs(quantity.milli_value()) > MAX_QUANTITY:
        return f"{name} is counted in milli-units, which must not exceed MAX_QUANTITY ({MAX_QUANTITY})"
    return None


def cpu_is_integer(container: Container) -> bool:
    """The container's cpu request (or, without one, its limit) is a whole number of cores."""
    resources = container.resources
    if resources is None:
        return True
    cpu = (resources.requests or {}).get("cpu", (resources.limits or {}).get("cpu"))
    return cpu is None or Quantity.parse(cpu).milli_value() % 1000 == 0
