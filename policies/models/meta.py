"""The Kubernetes object envelope shared by every kind.

Conventions for every model in :mod:`policies.models`:

* camelCase on the wire, snake_case in Python (``alias_generator=to_camel``);
* unknown fields are rejected with their path (``extra="forbid"``), like kubectl's
  strict server-side field validation. Free-form places (``metadata.labels`` and
  ``annotations``, pod templates' unmodelled fields) use :class:`OpenModel`;
* dumping uses :meth:`K8sModel.to_wire`, which drops unset ``None`` fields so a
  round-trip gives back what the user wrote.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class K8sModel(BaseModel):
    """Strict camelCase model: unknown fields are errors."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
        ser_json_timedelta="float",
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with camelCase keys and no unset ``None`` fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OpenModel(K8sModel):
    """A model that keeps fields it does not know (pod spec details, opaque blobs)."""

    model_config = ConfigDict(extra="allow")


class OwnerReference(K8sModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: Optional[bool] = None
    block_owner_deletion: Optional[bool] = None


class ObjectMeta(K8sModel):
    name: Optional[str] = None
    generate_name: Optional[str] = None
    namespace: Optional[str] = None
    uid: Optional[str] = None
    resource_version: Optional[str] = None
    generation: Optional[int] = None
    creation_timestamp: Optional[str] = None
    deletion_timestamp: Optional[str] = None
    deletion_grace_period_seconds: Optional[int] = None
    labels: Optional[dict[str, str]] = None
    annotations: Optional[dict[str, str]] = None
    finalizers: Optional[list[str]] = None
    owner_references: Optional[list[OwnerReference]] = None
    managed_fields: Optional[list[dict[str, Any]]] = None
    self_link: Optional[str] = None


class ListMeta(K8sModel):
    resource_version: Optional[str] = None
    # `continue` is a Python keyword
    continue_: Optional[str] = Field(default=None, alias="continue")
    remaining_item_count: Optional[int] = None


class LabelSelectorRequirement(K8sModel):
    key: str
    operator: str
    values: Optional[list[str]] = None


class LabelSelector(K8sModel):
    match_labels: Optional[dict[str, str]] = None
    match_expressions: Optional[list[LabelSelectorRequirement]] = None


class Condition(K8sModel):
    """A status condition; Volcano's and Karmada's variants share these fields."""

    type: Optional[str] = None
    status: Optional[str] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[str] = None
    last_probe_time: Optional[str] = None
    last_heartbeat_time: Optional[str] = None
    last_update_time: Optional[str] = None
    observed_generation: Optional[int] = None
    transition_id: Optional[str] = Field(default=None, alias="transitionID")


class TypedObject(K8sModel):
    """apiVersion + kind + metadata: the envelope of every top-level kind.

    Subclasses set ``API_VERSION`` and ``KIND``; the codec dispatches on them.
    """

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    def ref(self) -> str:
        """``Kind ns/name`` (or ``Kind name`` when cluster-scoped): how errors name objects."""
        ns = self.metadata.namespace
        return f"{self.kind or self.KIND} {ns + '/' if ns else ''}{self.metadata.name or '<unnamed>'}"


ResourceList = dict[str, Any]
"""A Kubernetes ResourceList. Validated by :func:`policies.models.fields.resource_list`."""
