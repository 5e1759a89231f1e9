"""Field descriptions of the served kinds: what ``kubectl explain`` prints.

One table module per model module, named alike (``policies.api_docs.volcano_batch`` describes
``policies.models.volcano_batch``). Each has ``TYPES`` (class name -> what the type is) and
``FIELDS`` (class name -> wire field name -> what the field means). The text is Caldera's own,
written from the meaning Volcano's, Karmada's, Kubeflow's and Kubernetes' API documentation gives
each field, plus what Caldera does with it where that differs.

:class:`DescribedSchema` puts the descriptions into a model's JSON schema. It is the one source:
the API server's OpenAPI v2 and v3 documents and its CustomResourceDefinitions are all generated
from that schema (``federation.apiserver.openapi``, ``federation.apiserver.crds``).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Any, Optional

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

#: Fields every top-level kind has, with the same meaning everywhere (Kubernetes' API conventions).
COMMON: dict[str, str] = {
    "apiVersion": "The versioned schema this object is written in, as group/version (or just the version "
                  "for the core group). The server accepts only the version it serves for the kind.",
    "kind": "The type of this object, in CamelCase (Job, Queue, PropagationPolicy...). It must match the "
            "resource the request addresses.",
    "metadata": "Standard object metadata: name, namespace, labels, annotations, owner references and the "
                "server-set fields (uid, resourceVersion, generation, creationTimestamp).",
}


@cache
def _table(model_module: str) -> Optional[ModuleType]:
    if not model_module.startswith("policies.models."):
        return None
    try:
        return importlib.import_module(f"policies.api_docs.{model_module.rsplit('.', 1)[1]}")
    except ModuleNotFoundError:
        return None


def type_description(model_module: str, class_name: str) -> Optional[str]:
    table = _table(model_module)
    types: dict[str, str] = getattr(table, "TYPES", {})
    return types.get(class_name)


def field_description(model_module: str, class_name: str, field: str) -> Optional[str]:
    """What ``field`` (its wire name) of ``class_name`` means, or None when the tables say nothing."""
    table = _table(model_module)
    fields: dict[str, dict[str, str]] = getattr(table, "FIELDS", {})
    found = fields.get(class_name, {}).get(field)
    return found if found is not None else COMMON.get(field)


def _inherited(cls: type[Any], field: str) -> Optional[str]:
    """A field's description on the class or, for an inherited field, on the base that declares it."""
    for base in cls.__mro__:
        text = field_description(base.__module__, base.__name__, field)
        if text is not None:
            return text
    return None


def describe(json_schema: JsonSchemaValue, cls: type[Any]) -> None:
    """Put the tables' descriptions on one model's JSON schema (in place)."""
    own = type_description(cls.__module__, cls.__name__)
    if own is not None:
        json_schema["description"] = own
    for name, prop in (json_schema.get("properties") or {}).items():
        text = _inherited(cls, name)
        if text is not None:
            prop["description"] = text


class DescribedSchema(GenerateJsonSchema):
    """Pydantic's JSON schema generator with the tables' descriptions on every model and field."""

    def model_schema(self, schema: Any) -> JsonSchemaValue:  # pydantic_core's ModelSchema
        json_schema = super().model_schema(schema)
        describe(json_schema, schema["cls"])
        return json_schema
