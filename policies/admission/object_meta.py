"""``metadata`` rules every kind obeys (Kubernetes' ObjectMeta validation): labels and annotations.

* label keys are qualified names (optional DNS-subdomain prefix of at most 253 characters,
  ``/``, a name of at most 63); label values are at most :data:`LABEL_VALUE_MAX` characters of
  alphanumerics, ``-``, ``_``, ``.``, starting and ending alphanumeric (or empty);
* annotation keys are qualified names; keys and values together are at most
  :data:`TOTAL_ANNOTATION_SIZE_MAX` bytes.

Messages follow the API machinery's wording.
"""

from __future__ import annotations

import re
from typing import Optional

from policies.admission.names import key_path, qualified_name_error
from policies.errors import FieldError
from policies.models.meta import ObjectMeta

#: Kubernetes' validation.LabelValueMaxLength.
LABEL_VALUE_MAX = 63
#: Kubernetes' TotalAnnotationSizeLimitB: 256 KiB over every annotation key and value.
TOTAL_ANNOTATION_SIZE_MAX = 256 * 1024

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value_error(value: str) -> Optional[str]:
    """Why ``value`` is not a valid label value, or None."""
    if len(value) > LABEL_VALUE_MAX:
        return f"must be no more than {LABEL_VALUE_MAX} characters (LABEL_VALUE_MAX)"
    if not _LABEL_VALUE.match(value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def validate_object_meta(meta: Optional[ObjectMeta], path: str = "metadata") -> list[FieldError]:
    """Every label and annotation rule ``meta`` breaks."""
    errors: list[FieldError] = []
    if meta is None:
        return errors
    for key, value in (meta.labels or {}).items():
        problem = qualified_name_error(key)
        if problem:
            errors.append(FieldError(f"{path}.labels", f"Invalid value: {key!r}: label key {problem}"))
        problem = label_value_error(value)
        if problem:
            errors.append(FieldError(key_path(f"{path}.labels", key), f"Invalid value: {value!r}: {problem}"))
    total = 0
    for key, value in (meta.annotations or {}).items():
        problem = qualified_name_error(key.lower())
        if problem:
            errors.append(FieldError(f"{path}.annotations", f"Invalid value: {key!r}: annotation key {problem}"))
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE_MAX:
        errors.append(FieldError(f"{path}.annotations", f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_MAX} "
                                                        f"bytes (TOTAL_ANNOTATION_SIZE_MAX), got {total}"))
    return errors
