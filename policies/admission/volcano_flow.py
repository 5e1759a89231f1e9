"""Volcano JobFlow and JobTemplate admission (volcano.md §8.4, §10.4).

JobFlow: at least one flow, unique flow names that can name jobs (``<jobflow>-<flow>``),
every ``dependsOn.targets`` entry a defined flow ("jobflow Flow is not DAG: vertex is not
defined"), and no cycle ("jobflow Flow is not DAG"). JobTemplate: its spec is a Job spec,
defaulted and checked with the Job rules.
"""

from __future__ import annotations

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_object_name, dns1123_label_error
from policies.admission.volcano_job import default_job_spec, validate_job_spec
from policies.errors import FieldError
from policies.models.volcano_flow import JobFlow, JobTemplate


class JobFlowAdmitter:
    def mutate(self, obj: JobFlow, ctx: AdmissionContext, creating: bool) -> JobFlow:
        return obj

    def validate(self, obj: JobFlow, old: JobFlow | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, "jobflow")
        flows = obj.spec.flows or []
        if not flows:
            errors.append(FieldError("spec.flows", "a JobFlow needs at least one flow"))
        names: dict[str, int] = {}
        for index, flow in enumerate(flows):
            problem = dns1123_label_error(flow.name)
            if problem:
                errors.append(FieldError(f"spec.flows[{index}].name", f"flow name {problem}"))
            if flow.name in names:
                errors.append(FieldError(f"spec.flows[{index}].name", f"duplicated flow name {flow.name!r} "
                                                                      f"(also spec.flows[{names[flow.name]}])"))
            else:
                names[flow.name] = index
        graph: dict[str, list[str]] = {}
        for index, flow in enumerate(flows):
            for j, target in enumerate(flow.targets()):
                if target not in names:
                    errors.append(FieldError(f"spec.flows[{index}].dependsOn.targets[{j}]",
                                             f"jobflow Flow is not DAG: vertex is not defined: {target!r}"))
            graph[flow.name] = [t for t in flow.targets() if t in names]
        cycle = _find_cycle(graph)
        if cycle:
            errors.append(FieldError("spec.flows", f"jobflow Flow is not DAG: {' -> '.join(cycle)}"))
        return errors


def _find_cycle(graph: dict[str, list[str]]) -> list[str]:
    """One cycle of ``graph`` as a closed path (``a -> b -> a``), or empty."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


class JobTemplateAdmitter:
    def mutate(self, obj: JobTemplate, ctx: AdmissionContext, creating: bool) -> JobTemplate:
        if creating:
            default_job_spec(obj.spec, ctx.scheduler_name)
        return obj

    def validate(self, obj: JobTemplate, old: JobTemplate | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, "jobtemplate")
        errors.extend(validate_job_spec(obj.spec, obj.metadata.name))
        return errors


ADMITTERS: dict[str, Admitter] = {"JobFlow": JobFlowAdmitter(), "JobTemplate": JobTemplateAdmitter()}
