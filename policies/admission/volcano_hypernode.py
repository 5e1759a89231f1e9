"""HyperNode admission (``topology.volcano.sh/v1alpha1``, volcano.md §10.4), validating only.

Rules of Volcano's webhook and CRD schema: ``spec.tier`` is given and not negative;
``spec.members`` has at least one member; each member has a ``type`` (``Node`` or
``HyperNode``) and a selector that sets exactly one of ``exactMatch``, ``regexMatch`` and
``labelMatch``; an ``exactMatch.name`` is a non-empty qualified name; a ``regexMatch.pattern``
is non-empty and compiles; a ``labelMatch`` is a well-formed label selector that selects
something (matchLabels or matchExpressions).

What one object cannot show (a cycle between HyperNodes, a node claimed by two HyperNodes of
one tier) is not refused here: the scheduler's topology tree reports it as a problem of the
topology (``member_agent/scheduler/framework/hypernodes.py``).
"""

from __future__ import annotations

import re
from typing import Optional

from policies.admission import AdmissionContext, Admitter, require
from policies.admission.names import check_object_name, qualified_name_error
from policies.errors import FieldError
from policies.k8s import label_selector
from policies.models.meta import LabelSelector
from policies.models.volcano_topology import HyperNode, MemberSelector


def _label_match_errors(selector: LabelSelector, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not selector.match_labels and not selector.match_expressions:
        errors.append(FieldError(path, "labelMatch must set matchLabels or matchExpressions"))
    for key, value in (selector.match_labels or {}).items():
        problem = qualified_name_error(key)
        if problem:
            errors.append(FieldError(f"{path}.matchLabels", f"invalid label key: {problem}"))
        require(errors, len(value) <= 63, f"{path}.matchLabels", f"label value {value!r} is longer than 63")
    expressions = selector.model_dump(by_alias=True, exclude_none=True).get("matchExpressions")
    errors += label_selector.validate({"matchExpressions": expressions}, path)
    return errors


def validate_member_selector(selector: Optional[MemberSelector], path: str) -> list[FieldError]:
    """Exactly one selector kind, each well formed (Volcano's ``validateHyperNodeMemberSelector``)."""
    if selector is None:
        return [FieldError(path, "a member needs a selector: exactly one of exactMatch, regexMatch or labelMatch")]
    chosen = selector.chosen()
    if len(chosen) != 1:
        found = ", ".join(chosen) if chosen else "none"
        return [FieldError(path, f"exactly one of exactMatch, regexMatch or labelMatch must be set, found {found}")]
    errors: list[FieldError] = []
    if selector.exact_match is not None:
        name = selector.exact_match.name or ""
        if not name:
            errors.append(FieldError(f"{path}.exactMatch.name", "required field is missing"))
        else:
            problem = qualified_name_error(name)
            if problem:
                errors.append(FieldError(f"{path}.exactMatch.name", problem))
    elif selector.regex_match is not None:
        pattern = selector.regex_match.pattern or ""
        if not pattern:
            errors.append(FieldError(f"{path}.regexMatch.pattern", "required field is missing"))
        else:
            try:
                re.compile(pattern)
            except re.error as exc:
                errors.append(FieldError(f"{path}.regexMatch.pattern",
                                         f"invalid regular expression {pattern!r}: {exc}"))
    elif selector.label_match is not None:
        errors.extend(_label_match_errors(selector.label_match, f"{path}.labelMatch"))
    return errors


class HyperNodeAdmitter:
    def mutate(self, obj: HyperNode, ctx: AdmissionContext, creating: bool) -> HyperNode:
        return obj

    def validate(self, obj: HyperNode, old: HyperNode | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        spec = obj.spec
        check_object_name(errors, obj.metadata.name, "hypernode")
        if spec.tier is None:
            errors.append(FieldError("spec.tier", "required field is missing"))
        elif spec.tier < 0:
            errors.append(FieldError("spec.tier", f"must be >= 0, got {spec.tier}"))
        if not spec.members:
            errors.append(FieldError("spec.members", "a HyperNode must have at least one member"))
        for index, member in enumerate(spec.members or []):
            at = f"spec.members[{index}]"
            if member.type is None:
                errors.append(FieldError(f"{at}.type", "required field is missing: Node or HyperNode"))
            errors.extend(validate_member_selector(member.selector, f"{at}.selector"))
        return errors


ADMITTERS: dict[str, Admitter] = {"HyperNode": HyperNodeAdmitter()}
