"""What an agent that ran a Job has imported: the roles it plays, not the federation's optimizer,
and of admission only the rules of the kinds it admits (a fresh interpreter, so nothing another
test imported counts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policies import admission

ROOT = Path(__file__).resolve().parents[2]

RUN_ONE_JOB = """
import asyncio, json, sys
import member_agent.agent_cmd, member_agent.sync, member_agent.cluster.sim
from tests.agent.agent_fakes import Harness, job_work

async def main():
    h = Harness(real_scheduler=True)
    await h.start()
    h.federation.put_work(job_work("train", replicas=2, cpu="2", duration="1s"))
    await h.run_until(lambda: h.job_phase("train") == "Completed")
    await h.stop()

asyncio.run(main())
print(json.dumps(sorted(sys.modules)))
"""

#: (module prefix, why the agent must not have it)
NEVER = [
    ("scipy", "the federation's optimizer; the agent never places across clusters"),
    ("highspy", "the federation's optimizer"),
    ("federation", "federation and member_agent never import each other"),
    ("kubernetes_asyncio", "the agent talks to the federation over its own REST client"),
    ("policies.admission.karmada", "the agent admits Volcano Jobs only"),
    ("policies.admission.rbac", "the agent admits Volcano Jobs only"),
    ("policies.admission.kubeflow", "the agent admits Volcano Jobs only"),
    ("policies.admission.volcano_flow", "the agent admits Volcano Jobs only"),
]


@pytest.fixture(scope="module")
def modules_after_a_job() -> list[str]:
    out = subprocess.run([sys.executable, "-c", RUN_ONE_JOB], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("prefix", "why"), NEVER, ids=[p for p, _ in NEVER])
def test_agent_that_ran_a_job_never_imported(modules_after_a_job: list[str], prefix: str, why: str) -> None:
    loaded = [m for m in modules_after_a_job if m == prefix or m.startswith(prefix + ".")]
    assert not loaded, f"{prefix} imported ({why})"


def test_agent_admitted_its_job_with_the_volcano_job_rules(modules_after_a_job: list[str]) -> None:
    assert "policies.admission.volcano_job" in modules_after_a_job


def test_kind_modules_table_matches_every_rule_module() -> None:
    """The lazy kind -> module table names every admitter each rule module registers, and only those."""
    import importlib

    declared = {}
    for module in admission.BUILTIN_MODULES:
        for kind in importlib.import_module(f"policies.admission.{module}").ADMITTERS:
            declared[kind] = module
    assert declared == admission.KIND_MODULES


RUN_ONE_JOB_MODELS = RUN_ONE_JOB.replace("print(json.dumps(sorted(sys.modules)))", """
from pydantic import BaseModel
todo, seen = [BaseModel], set()
while todo:
    for sub in todo.pop().__subclasses__():
        if sub not in seen:
            seen.add(sub)
            todo.append(sub)
print(json.dumps(sorted(c.__name__ for c in seen if c.__module__.startswith("policies.")
                        and c.__dict__.get("__pydantic_complete__"))))
""").replace("    await h.stop()", "    h.agent.cluster_status()\n    await h.stop()")


def test_agent_that_ran_a_job_built_no_second_pod_spec_pod_template_or_pod_group_spec_schema() -> None:
    """Pod specs (capacity), pod templates (the pods built) and PodGroup specs (the controller's
    comparison) go through the Pod, Job and PodGroup validators/serializers the agent builds anyway:
    no second copy of those schemas."""
    out = subprocess.run([sys.executable, "-c", RUN_ONE_JOB_MODELS], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    built = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"Pod", "Job", "PodGroup"} <= set(built)
    assert not {"PodSpec", "PodGroupSpec", "PodTemplateSpec"} & set(built)
