"""The agent imports only the scheduler actions and plugins its conf names (checked in a fresh
interpreter through ``sys.modules``, since this test process has imported them all already)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys
from member_agent.scheduler.actions import REGISTRY as ACTIONS
from member_agent.scheduler.plugins import REGISTRY as PLUGINS
import member_agent.scheduler.scheduler_cache  # imports plugins.device_ledger and gpu_matrix

def loaded(registry):
    prefix = "member_agent.scheduler." + ("plugins." if registry is PLUGINS else "actions.")
    names = {name.replace("-", "_") for name in registry.names()}
    return sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix) and m[len(prefix):] in names)

before = {"plugins": loaded(PLUGINS), "actions": loaded(ACTIONS)}
from member_agent.scheduler import FixedClock, build_snapshot, run_cycle
from policies.scheduler_conf import parse_scheduler_conf
conf = parse_scheduler_conf("actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
                            "- plugins:\n  - name: predicates\n  - name: binpack\n")
run_cycle(build_snapshot([]), conf, FixedClock(0.0))
print(json.dumps({"before": before, "after": {"plugins": loaded(PLUGINS), "actions": loaded(ACTIONS)}}))
"""


def test_only_the_configured_actions_and_plugins_are_imported() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["before"] == {"plugins": [], "actions": []}
    assert result["after"] == {"plugins": ["binpack", "gang", "predicates", "priority"],
                               "actions": ["allocate", "enqueue"]}
