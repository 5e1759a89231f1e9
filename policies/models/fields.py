"""Reusable annotated field types: resource lists, quantities, durations, typed envelopes.

A ResourceList keeps exactly what the user wrote (``"500m"``, ``4``, ``"1Gi"``) so that
dumping gives the manifest back, but every quantity is parsed on the way in; a bad one is
an error at ``<field path>.<resource name>`` whose message names the text. Use
:func:`resource_vector` to read a list in scheduler units.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Mapping, Optional, Union

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, field_validator

from policies.errors import InvalidQuantity
from policies.k8s import durations
from policies.models.meta import TypedObject
from policies.quantity import MAX_QUANTITY, Quantity, remembered_for
from policies.resources import ResourceVector

# --------------------------------------------------------------------------- quantities

_RESOURCE_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


@remembered_for(str)  # the few request texts a workload repeats; a bad text raises every time
def _check_quantity(value: Any) -> Union[int, float, str]:
    # Quantity.parse raises InvalidQuantity (a ValueError) naming the text, bools included.
    parsed = Quantity.parse(value)
    if abs(parsed.value) > MAX_QUANTITY:
        # Kubernetes' Quantity holds at most 2^63-1; beyond it arithmetic (and float()) overflows.
        raise InvalidQuantity(value, f"larger than MAX_QUANTITY ({MAX_QUANTITY}, 2^63-1 as in Kubernetes)")
    if isinstance(value, (int, float, str)):
        return value
    return parsed.canonical()  # a Quantity built in Python is stored as its canonical text


#: One quantity as written: a string (``"500m"``) or a YAML number (``4``, ``0.5``).
#: One plain validator, so a bad value is one error at the resource's path.
QuantityValue = Annotated[Union[int, float, str], PlainValidator(_check_quantity)]


@lru_cache(maxsize=1024)  # a handful of names, matched on every ResourceList validated
def _valid_resource_name(name: str) -> bool:
    return _RESOURCE_NAME.match(name) is not None


def _check_resource_names(value: dict[str, Any]) -> dict[str, Any]:
    for name in value:
        if not _valid_resource_name(name):
            raise ValueError(f"{name!r} is not a valid resource name (a qualified name such as "
                             f"'cpu', 'memory' or 'nvidia.com/gpu')")
    return value


#: A Kubernetes ResourceList: resource name -> quantity, kept as written.
ResourceListField = Annotated[dict[str, QuantityValue], AfterValidator(_check_resource_names)]


def resource_vector(resource_list: Optional[Mapping[str, Any]]) -> ResourceVector:
    """A ResourceList in scheduler units (cpu milli, memory bytes, scalars milli)."""
    return ResourceVector.from_resource_list(resource_list or {})


def quantity_text(value: Union[int, float, str]) -> str:
    """The canonical text of an already validated quantity."""
    try:
        return Quantity.parse(value).canonical()
    except InvalidQuantity:  # pragma: no cover - validated on the way in
        return str(value)


# --------------------------------------------------------------------------- integers

#: Kubernetes and Volcano count replicas, minAvailable, weights and priorities in int32.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _check_int32(value: Any) -> Any:
    """An int32 as the API's JSON decoding takes it: a whole JSON number, never a boolean or a string."""
    if isinstance(value, bool):
        raise ValueError(f"must be an integer, got boolean {str(value).lower()}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"must be an integer, got {type(value).__name__} {value!r}")
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{value} is out of range for int32 (INT32_MIN {INT32_MIN} .. INT32_MAX {INT32_MAX})")
    return value


#: An int32 field (``replicas``, ``minAvailable``, ``weight``...): booleans, strings and values beyond
#: int32 are errors at the field's path.
Int32 = Annotated[int, BeforeValidator(_check_int32), Field(ge=INT32_MIN, le=INT32_MAX)]


# --------------------------------------------------------------------------- durations

def _check_duration(value: str) -> str:
    try:
        durations.parse_nanoseconds(value)
    except durations.InvalidDuration:
        raise ValueError(f"{value!r} is not a duration (Go syntax such as '30s', '10m', '1h30m')") from None
    return value


#: A Go ``time.Duration`` as text (``"90s"``, ``"1h30m"``), kept as written.
Duration = Annotated[str, AfterValidator(_check_duration)]


def duration_seconds(value: str) -> float:
    """Seconds in a Go duration string (already validated)."""
    return durations.parse_seconds(value)


# --------------------------------------------------------------------------- envelopes


class KindObject(TypedObject):
    """A top-level kind whose apiVersion/kind default to, and must equal, the class's own.

    A manifest written for another version (``batch.volcano.sh/v1beta1``) or handed to the
    wrong model fails at ``apiVersion``/``kind`` with the expected value in the message.
    """

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    api_version: str = Field(default="", validate_default=True)
    kind: str = Field(default="", validate_default=True)

    @field_validator("api_version")
    @classmethod
    def _check_api_version(cls, value: str) -> str:
        if not value:
            return cls.API_VERSION
        if value != cls.API_VERSION:
            raise ValueError(f"apiVersion must be {cls.API_VERSION!r} for kind {cls.KIND}, got {value!r}")
        return value

    @field_validator("kind")
    @classmethod
    def _check_kind(cls, value: str) -> str:
        if not value:
            return cls.KIND
        if value != cls.KIND:
            raise ValueError(f"kind must be {cls.KIND!r} for this model, got {value!r}")
        return value

    def to_wire(self) -> dict[str, Any]:
        """As :meth:`K8sModel.to_wire`, without an empty ``metadata`` the user never wrote."""
        wire = super().to_wire()
        if wire.get("metadata") == {} and "metadata" not in self.model_fields_set:
            del wire["metadata"]
        return wire
