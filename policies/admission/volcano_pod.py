"""Pod admission: Volcano's pod webhook (volcano.md §10.4) plus the pod-spec subset of Kubernetes'.

For pods handed to a Volcano scheduler (``spec.schedulerName`` is the context's scheduler, or
absent): at most one of the job disruption budget annotations ``volcano.sh/jdb-min-available``
and ``volcano.sh/jdb-max-unavailable``, and its value a positive integer or a percentage from
1% to 99%. Every pod: the container/resource/toleration rules of
:func:`policies.admission.pod_template.validate_pod_spec`.
"""

from __future__ import annotations

import re

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_object_name, key_path
from policies.admission.pod_template import validate_pod_spec
from policies.errors import FieldError
from policies.models.core import Pod

JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
_INTEGER = re.compile(r"^[1-9][0-9]*$")
_PERCENT = re.compile(r"^([1-9]|[1-9][0-9])%$")


def _budget_error(value: str) -> str | None:
    if _INTEGER.match(value) or _PERCENT.match(value):
        return None
    return f"{value!r} must be a positive integer or a percentage between 1% and 99%"


class PodAdmitter:
    def mutate(self, obj: Pod, ctx: AdmissionContext, creating: bool) -> Pod:
        return obj

    def validate(self, obj: Pod, old: Pod | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, "pod")
        errors.extend(validate_pod_spec(obj.spec, "spec"))
        if obj.spec.scheduler_name not in (None, ctx.scheduler_name):
            return errors
        annotations = obj.metadata.annotations or {}
        present = [key for key in (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE) if key in annotations]
        if len(present) > 1:
            errors.append(FieldError(key_path("metadata.annotations", JDB_MAX_UNAVAILABLE),
                                     f"not allowed to configure both {JDB_MIN_AVAILABLE} and {JDB_MAX_UNAVAILABLE}"))
        for key in present:
            problem = _budget_error(annotations[key])
            if problem:
                errors.append(FieldError(key_path("metadata.annotations", key), f"{key} {problem}"))
        return errors


ADMITTERS: dict[str, Admitter] = {"Pod": PodAdmitter()}
