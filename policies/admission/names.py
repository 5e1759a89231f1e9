"""Kubernetes name rules (DNS-1123 labels and subdomains, qualified names) and path helpers.

Messages follow the API machinery's wording so users recognise them from kubectl.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

from policies.errors import FieldError
from policies.quantity import Quantity

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def dns1123_label_error(value: str) -> Optional[str]:
    """Why ``value`` is not an RFC 1123 label, or None."""
    if len(value) > DNS1123_LABEL_MAX:
        return f"{value!r} must be no more than {DNS1123_LABEL_MAX} characters"
    if not _DNS1123_LABEL.match(value):
        return (f"{value!r} is not a valid RFC 1123 label: it must consist of lower case alphanumeric "
                f"characters or '-', and must start and end with an alphanumeric character")
    return None


def dns1123_subdomain_error(value: str) -> Optional[str]:
    """Why ``value`` is not an RFC 1123 subdomain (the rule for most object names), or None."""
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"{value!r} must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.match(value):
        return (f"{value!r} is not a valid RFC 1123 subdomain: it must consist of lower case alphanumeric "
                f"characters, '-' or '.', and must start and end with an alphanumeric character")
    return None


def qualified_name_error(value: str) -> Optional[str]:
    """Why ``value`` is not a qualified name (optional ``prefix/`` + name of at most 63), or None."""
    prefix, _, name = value.rpartition("/")
    if prefix and dns1123_subdomain_error(prefix):
        return f"{value!r}: prefix part must be a valid RFC 1123 subdomain"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"{value!r}: name part must be no more than {QUALIFIED_NAME_MAX} characters"
    if not _QUALIFIED_NAME.match(name):
        return (f"{value!r}: name part must consist of alphanumeric characters, '-', '_' or '.', "
                f"and must start and end with an alphanumeric character")
    return None


def check_object_name(errors: list[FieldError], name: Optional[str], kind: str) -> None:
    """``metadata.name`` must be an RFC 1123 subdomain when given.

    A missing name is left to the API server (``generateName``, or a manifest checked offline).
    """
    if name is None:
        return
    problem = dns1123_subdomain_error(name)
    if problem:
        errors.append(FieldError("metadata.name", f"{kind} name {problem}"))


def key_path(base: str, key: str) -> str:
    """``base.key``, or ``base[key]`` for a key that is not a plain word (``limits[nvidia.com/gpu]``)."""
    if _PLAIN_KEY.match(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{key}]"


def check_non_negative_resources(errors: list[FieldError], resources: Optional[dict[str, Any]],
                                 path: str) -> None:
    """Every quantity of a ResourceList is >= 0 (Kubernetes: "must be greater than or equal to 0")."""
    for name, value in (resources or {}).items():
        if Quantity.parse(value).value < 0:
            errors.append(FieldError(key_path(path, name), f"{value!r} must be greater than or equal to 0"))


def as_int(value: Union[int, None], default: int = 0) -> int:
    return default if value is None else value
