"""Admission: Volcano's and Karmada's mutating and validating rules, per kind.

``admit(obj, old=None, context=None)`` defaults a copy of ``obj`` (mutating webhooks,
CREATE only unless a rule says otherwise), validates it, and returns the defaulted copy,
or raises :class:`~policies.errors.ValidationFailed` listing *every* broken rule with its
field path. Nothing is changed when validation fails.

Each kind registers an :class:`Admitter` in :data:`ADMITTERS` (module per kind family:
``volcano_job.py``, ``volcano_queue.py``, ``karmada.py``...). Rules that need other
objects (does the queue exist, is it Open) ask the :class:`AdmissionContext`; offline
(``caldera validate``) the context knows nothing and such rules are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from policies.admission.object_meta import validate_object_meta
from policies.errors import FieldError, ValidationFailed
from policies.models.meta import TypedObject

#: ``get(kind, namespace, name)`` -> the stored object as a wire dict, or None.
Getter = Callable[[str, Optional[str], str], Optional[dict[str, Any]]]
#: ``list(kind, namespace)`` -> stored objects as wire dicts.
Lister = Callable[[str, Optional[str]], list[dict[str, Any]]]


@dataclass(frozen=True)
class AdmissionContext:
    """What admission may look up. Offline (no store) both callables are absent."""

    get: Optional[Getter] = None
    list: Optional[Lister] = None
    scheduler_name: str = "volcano"
    #: When false, rules that need stored objects (queue exists/Open) are skipped.
    online: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


OFFLINE = AdmissionContext()


class Admitter(Protocol):
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        """Return the defaulted object (may be ``obj`` itself, already copied by admit)."""

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        """Every rule ``obj`` breaks (``old`` is the stored object on update)."""


#: kind name -> admitter; filled by :func:`admitter_for` (one module) or :func:`_register_builtin` (all).
ADMITTERS: dict[str, Admitter] = {}


def register(kind: str, admitter: Admitter) -> None:
    if kind in ADMITTERS:
        raise ValueError(f"admitter for {kind} registered twice")
    ADMITTERS[kind] = admitter


def admit(obj: TypedObject, old: TypedObject | None = None, context: AdmissionContext = OFFLINE) -> TypedObject:
    """Default and validate ``obj``; raises :class:`ValidationFailed` with every error."""
    admitter = admitter_for(obj.kind or obj.KIND)
    candidate = obj.model_copy(deep=True)
    if admitter is not None:
        candidate = admitter.mutate(candidate, context, old is None)
    errors = validate_object_meta(candidate.metadata)
    if admitter is not None:
        errors.extend(admitter.validate(candidate, old, context))
    if errors:
        raise ValidationFailed(candidate.ref(), errors)
    return candidate


#: Rule modules; each exports ``ADMITTERS: dict[kind, Admitter]``.
BUILTIN_MODULES: list[str] = ["karmada", "karmada_objects", "volcano_job", "volcano_vcjob", "volcano_queue", "volcano_podgroup", "volcano_flow", "priority_class", "kubeflow", "volcano_pod", "rbac", "volcano_hypernode"]
#: kind -> the rule module that admits it, so admitting one kind imports only its module (the agent
#: admits Volcano Jobs and never loads the Karmada, RBAC or Kubeflow rules and their models);
#: tests/policies check it against every module's ``ADMITTERS``.
KIND_MODULES: dict[str, str] = {
    **dict.fromkeys(("PropagationPolicy", "ClusterPropagationPolicy", "OverridePolicy", "ClusterOverridePolicy"),
                    "karmada"),
    **dict.fromkeys(("Cluster", "ResourceBinding", "Work"), "karmada_objects"),
    "Job": "volcano_job", "VCJob": "volcano_vcjob", "Queue": "volcano_queue", "PodGroup": "volcano_podgroup",
    "JobFlow": "volcano_flow", "JobTemplate": "volcano_flow", "PriorityClass": "priority_class",
    **dict.fromkeys(("PyTorchJob", "TFJob", "MPIJob"), "kubeflow"),
    "Pod": "volcano_pod",
    "HyperNode": "volcano_hypernode",
    **dict.fromkeys(("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"), "rbac"),
}
_LOADED: set[str] = set()


def _load(module: str) -> None:
    """Import one rule module and register its admitters (once)."""
    if module in _LOADED:
        return
    _LOADED.add(module)
    import importlib

    mod = importlib.import_module(f"policies.admission.{module}")
    for kind, admitter in mod.ADMITTERS.items():
        register(kind, admitter)


def admitter_for(kind: str) -> Admitter | None:
    """The admitter of ``kind`` (None: no rules beyond object metadata), its module imported on first use."""
    module = KIND_MODULES.get(kind)
    if module is not None:
        _load(module)
    return ADMITTERS.get(kind)


def _register_builtin() -> None:
    """Import every rule module (explicit list, no import side effects elsewhere)."""
    for module in BUILTIN_MODULES:
        _load(module)


def require(errors: list[FieldError], condition: bool, path: str, message: str) -> None:
    """Append ``FieldError(path, message)`` when ``condition`` is false."""
    if not condition:
        errors.append(FieldError(path, message))
