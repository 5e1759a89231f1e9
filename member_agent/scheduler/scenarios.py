"""Scenario files: a STATE plus what one session must decide, and a runner for them.

A scenario is a STATE file (docs/scheduler.md) whose last document is an expectation::

    kind: Expectation
    description: gang minAvailable 8 with 6 free GPUs binds nothing
    bindings: {}                            # exact map ns/pod -> node of this session
    bindingCount: 3                         # or only how many pods bind
    bound: {default/job-a: 0}               # pods bound this session, per PodGroup
    evicted: {default/job-b: 1}             # pods evicted this session, per PodGroup (all listed groups)
    nominationsCleared: [ns/pod]            # exact list of pods whose nominatedNodeName is cleared
    evictions: []                           # exact list of ns/pod
    evictionReasons: {ns/pod: "priority 10 < 1000"}  # substring of the eviction reason
    devices: {ns/pod: [0, 1]}               # exact GPU ids chosen for pods bound this session
    annotations: {ns/pod: {key: value}}     # annotations the agent must patch onto the pod
    podGroupAnnotations: {ns/pg: {key: value}}  # annotations for the PodGroup (allocated HyperNode)
    nodesOf: {ns/pg: [n1, n2]}              # the sorted distinct nodes the group's pods bind to
    now: "2026-06-01T00:00:00Z"             # the session clock (default: a fixed instant)
    pipelined: {default/job-b: [n1, n1]}    # exact, per PodGroup (node per pipelined pod)
    podGroups: {default/job-a: Inqueue}     # phases of the PodGroups listed
    reasons: {default/job-a: "gang: 6/8"}   # substring of the per-job reason
    conditions: {default/job-a: "2/8 tasks in gang unschedulable"}  # substring of a condition message
    problems: ["queue missing"]             # substrings of reported problems
    warnings: ["binpack.nvidia.com/gpu"]    # substrings of configuration warnings
    logs: ["PodGroup default/job-a is inqueue"]  # substrings of the V(5) log
    error: "unknown plugin"                 # the session must be refused with this message

Only the keys present are checked. Run one or more files or folders::

    python -m member_agent.scheduler.scenarios tests/data/scenarios/gang/minmember.yaml
    python -m member_agent.scheduler.scenarios tests/data/scenarios
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.object_fields import parse_time
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.state import load_documents, state_from_documents
from policies.errors import CalderaError

KNOWN_KEYS = frozenset({"kind", "description", "bindings", "bindingCount", "bound", "evicted", "evictions", "pipelined",
                        "nominationsCleared",
                        "podGroups", "reasons", "conditions", "problems", "warnings", "logs", "error",
                        "evictionReasons", "devices", "annotations", "now", "podGroupAnnotations", "nodesOf"})


@dataclass
class Outcome:
    path: str
    description: str = ""
    failures: list[str] = field(default_factory=list)
    result: CycleResult | None = None

    @property
    def ok(self) -> bool:
        return not self.failures


def _expectation(docs: list[dict[str, Any]], path: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rest = [d for d in docs if d.get("kind") != "Expectation"]
    found = [d for d in docs if d.get("kind") == "Expectation"]
    if len(found) != 1:
        raise ValueError(f"{path}: a scenario needs exactly one 'kind: Expectation' document, found {len(found)}")
    unknown = set(found[0]) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"{path}: unknown expectation keys {sorted(unknown)}; known: {sorted(KNOWN_KEYS)}")
    return rest, found[0]


def check_text(text: str, path: str = "<scenario>") -> Outcome:
    docs = load_documents(text, path)
    objects, expect = _expectation(docs, path)
    outcome = Outcome(path, str(expect.get("description", "")))
    verbosity = 5 if "logs" in expect else 0
    try:
        state = state_from_documents(objects)
        clock = FixedClock(parse_time(expect["now"])) if "now" in expect else FixedClock()
        result = run_cycle(state.snapshot, state.conf, clock, options=SessionOptions(verbosity=verbosity))
    except CalderaError as exc:
        if "error" in expect and str(expect["error"]) in str(exc):
            return outcome
        outcome.failures.append(f"session failed: {exc}")
        return outcome
    outcome.result = result
    if "error" in expect:
        outcome.failures.append(f"expected the session to fail with {expect['error']!r}, it ran")
    _compare(outcome, expect, result)
    return outcome


def _compare(outcome: Outcome, expect: dict[str, Any], result: CycleResult) -> None:
    fail = outcome.failures.append
    if "bindings" in expect and dict(expect["bindings"] or {}) != result.bindings:
        fail(f"bindings: expected {dict(sorted((expect['bindings'] or {}).items()))}, got {dict(sorted(result.bindings.items()))}")
    if "bindingCount" in expect and int(expect["bindingCount"]) != len(result.bindings):
        fail(f"bindingCount: expected {expect['bindingCount']}, got {len(result.bindings)}")
    if "bound" in expect:
        per_group = _bound_per_group(result)
        for group, count in (expect["bound"] or {}).items():
            if per_group.get(group, 0) != int(count):
                fail(f"bound[{group}]: expected {count}, got {per_group.get(group, 0)}")
    if "evicted" in expect:
        per_group = _bound_per_group(result, result.evictions)
        want = {g: int(n) for g, n in (expect["evicted"] or {}).items() if int(n)}
        if want != dict(per_group):
            fail(f"evicted: expected {dict(sorted(want.items()))}, got {dict(sorted(per_group.items()))}")
    if "nominationsCleared" in expect and sorted(expect["nominationsCleared"] or []) != sorted(result.nominations_cleared):
        fail(f"nominationsCleared: expected {sorted(expect['nominationsCleared'] or [])}, "
             f"got {sorted(result.nominations_cleared)}")
    if "evictions" in expect and sorted(expect["evictions"] or []) != sorted(result.evictions):
        fail(f"evictions: expected {sorted(expect['evictions'] or [])}, got {sorted(result.evictions)}")
    if "pipelined" in expect:
        want_pipelined = {k: sorted(v) for k, v in (expect["pipelined"] or {}).items()}
        if want_pipelined != result.pipelined:
            fail(f"pipelined: expected {want_pipelined}, got {result.pipelined}")
    for group, phase in (expect.get("podGroups") or {}).items():
        if result.pod_groups.get(group) != phase:
            fail(f"podGroups[{group}]: expected {phase}, got {result.pod_groups.get(group)}")
    for group, text in (expect.get("reasons") or {}).items():
        report = result.jobs.get(group)
        got = report.reason if report else None
        if got is None or str(text) not in got:
            fail(f"reasons[{group}]: expected to contain {text!r}, got {got!r}")
    for group, text in (expect.get("conditions") or {}).items():
        messages = [c.get("message", "") + " " + c.get("reason", "") for c in result.conditions.get(group, [])]
        if not any(str(text) in m for m in messages):
            fail(f"conditions[{group}]: no condition contains {text!r}; got {messages}")
    for text in expect.get("problems") or []:
        if not any(str(text) in p for p in result.problems):
            fail(f"problems: none contains {text!r}; got {result.problems}")
    for text in expect.get("warnings") or []:
        if not any(str(text) in w for w in result.warnings):
            fail(f"warnings: none contains {text!r}; got {result.warnings}")
    _compare_part2(fail, expect, result)
    for text in expect.get("logs") or []:
        if not any(str(text) in line for line in result.logs):
            fail(f"logs: no line contains {text!r}")


def _compare_part2(fail: Any, expect: dict[str, Any], result: CycleResult) -> None:
    """Eviction reasons, chosen GPU ids and pod annotations (scheduler part 2)."""
    for pod, text in (expect.get("evictionReasons") or {}).items():
        got = result.eviction_reasons.get(pod)
        if got is None or str(text) not in got:
            fail(f"evictionReasons[{pod}]: expected to contain {text!r}, got {got!r}")
    if "devices" in expect:
        want_devices = {pod: sorted(int(i) for i in ids) for pod, ids in (expect["devices"] or {}).items()}
        got_devices = {pod: sorted(d.get("gpus", [])) for pod, d in result.device_allocations.items() if d.get("gpus")}
        if want_devices != got_devices:
            fail(f"devices: expected {want_devices}, got {got_devices}")
    for group, wanted in (expect.get("podGroupAnnotations") or {}).items():
        annotations = result.pod_group_annotations.get(group, {})
        for key, value in (wanted or {}).items():
            if annotations.get(key) != (None if value is None else str(value)):
                fail(f"podGroupAnnotations[{group}][{key}]: expected {value!r}, got {annotations.get(key)!r}")
    for group, nodes in (expect.get("nodesOf") or {}).items():
        got_nodes = sorted({n for pod, n in result.bindings.items() if result.pod_owner.get(pod) == group})
        if got_nodes != sorted(nodes or []):
            fail(f"nodesOf[{group}]: expected {sorted(nodes or [])}, got {got_nodes}")
    for pod, wanted in (expect.get("annotations") or {}).items():
        pod_annotations = result.pod_annotations.get(pod, {})
        for key, value in (wanted or {}).items():
            if pod_annotations.get(key) != str(value):
                fail(f"annotations[{pod}][{key}]: expected {value!r}, got {pod_annotations.get(key)!r}")


def _bound_per_group(result: CycleResult, pods: Any = None) -> Counter[str]:
    """Bindings (or the given pods) of this session per PodGroup (pods map to groups through
    the job reports)."""
    counts: Counter[str] = Counter()
    owners = result.pod_owner
    for pod in result.bindings if pods is None else pods:
        group = owners.get(pod)
        if group:
            counts[group] += 1
    return counts


def check_file(path: str | Path) -> Outcome:
    return check_text(Path(path).read_text(encoding="utf-8"), str(path))


def scenario_files(root: str | Path) -> list[Path]:
    base = Path(root)
    if base.is_file():
        return [base]
    return sorted(p for p in base.rglob("*.yaml") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(__doc__)
        return 2
    failed = 0
    total = 0
    for arg in args:
        for path in scenario_files(arg):
            total += 1
            try:
                outcome = check_file(path)
            except (ValueError, CalderaError) as exc:
                print(f"ERROR {path}: {exc}")
                failed += 1
                continue
            if outcome.ok:
                print(f"PASS  {path}  {outcome.description}")
            else:
                failed += 1
                print(f"FAIL  {path}  {outcome.description}")
                for failure in outcome.failures:
                    print(f"      {failure}")
    print(f"{total - failed}/{total} scenarios passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
