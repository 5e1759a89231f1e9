"""Small types the Karmada models share: quantity maps, taints, tolerations, object references.

Quantities are checked on decode (an invalid one is an error at its exact path, e.g.
``status.resourceSummary.allocatable.cpu``) but kept as the text the user wrote, so a
decode -> dump -> decode round trip gives back the same object.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import BeforeValidator

from policies.models.meta import K8sModel
from policies.quantity import Quantity


def quantity_text(value: Any) -> str:
    """Check a quantity and keep its text (YAML numbers become their decimal text)."""
    Quantity.parse(value)  # raises InvalidQuantity (a ValueError) naming the text
    if isinstance(value, float):
        return repr(value)
    return str(value).strip()


QuantityText = Annotated[str, BeforeValidator(quantity_text)]
#: A Kubernetes ResourceList whose values are validated quantities.
QuantityMap = dict[str, QuantityText]


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
