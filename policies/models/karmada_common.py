"""Small types the Karmada models share: quantity maps, taints, tolerations, object references.

Quantities are checked on decode (an invalid one is an error at its exact path, e.g.
``status.resourceSummary.allocatable.cpu``) but kept as written (see
:mod:`policies.models.fields`). Taints and tolerations here take any operator/effect text:
Karmada's webhook, not the schema, rejects ``Lt``/``Gt`` and unknown effects, and
:mod:`policies.admission.karmada` reports them with the allowed values.
"""

from __future__ import annotations

from typing import Optional

from policies.models.fields import QuantityValue, ResourceListField
from policies.models.meta import K8sModel

#: A Kubernetes ResourceList whose values are validated quantities, kept as written.
QuantityMap = ResourceListField
#: One validated quantity, kept as written.
QuantityText = QuantityValue


class Taint(K8sModel):
    key: str
    value: Optional[str] = None
    effect: str
    time_added: Optional[str] = None


class Toleration(K8sModel):
    key: Optional[str] = None
    operator: Optional[str] = None
    value: Optional[str] = None
    effect: Optional[str] = None
    toleration_seconds: Optional[int] = None


class ObjectReference(K8sModel):
    """The resource template a binding or Work refers to."""

    api_version: str
    kind: str
    namespace: Optional[str] = None
    name: str
    uid: Optional[str] = None
    resource_version: Optional[str] = None


class LocalSecretReference(K8sModel):
    namespace: str
    name: str
