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
nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}"},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}} for i in range(100)]
group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "n"},
         "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n",
       "annotations": {"scheduling.k8s.io/group-name": "g"}},
       "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending"}}
bound = run_cycle(build_snapshot([*nodes, group, pod]), conf, FixedClock(0.0)).bindings
print(json.dumps({"before": before, "after": {"plugins": loaded(PLUGINS), "actions": loaded(ACTIONS)},
                  "bound": len(bound), "numpy_random": "numpy.random" in sys.modules}))
"""


def test_only_the_configured_actions_and_plugins_are_imported() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["before"] == {"plugins": [], "actions": []}
    assert result["after"] == {"plugins": ["binpack", "gang", "predicates", "priority"],
                               "actions": ["allocate", "enqueue"]}
    # a session over 100 nodes (node-state classes included) leaves numpy.random unimported (~3 MiB)
    assert result["bound"] == 1 and result["numpy_random"] is False


PLUGINS_PROBE = r"""
import json, os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = sys.argv[1]
from member_agent.agent_cmd import skip_pydantic_plugin_discovery
skip_pydantic_plugin_discovery()
from pydantic import ValidationError
from pydantic_core import SchemaValidator
from policies.models.core import Pod
from policies.models.volcano_batch import Job
pod = Pod.model_validate({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
try:
    Job.model_validate({"metadata": {"name": "j"}, "spec": {"minAvailable": "not a number"}})
    error = None
except ValidationError as exc:
    error = exc.errors()[0]["loc"]
loaded = "importlib.metadata" in sys.modules
import pydantic.plugin._loader as loader  # asking for the loader by name still works
print(json.dumps({"metadata_imported": loaded, "plain_validator": type(Pod.__pydantic_validator__) is SchemaValidator,
                  "pod": pod.metadata.name, "error": error, "plugins": list(loader.get_plugins())}))
"""


def _plugins_probe(setting: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PLUGINS_PROBE, setting], capture_output=True, text=True, check=True,
                         timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_models_are_built_without_importing_importlib_metadata_when_plugins_are_disabled() -> None:
    """The agent disables pydantic's plugins; their discovery module (which imports importlib.metadata,
    zipfile, csv: ~0.7 MiB kept) is then not even imported, and validation is unchanged."""
    result = _plugins_probe("__all__")
    assert result == {"metadata_imported": False, "plain_validator": True, "pod": "p",
                      "error": ["spec", "minAvailable"], "plugins": []}


def test_plugin_discovery_is_left_alone_unless_plugins_are_disabled() -> None:
    result = _plugins_probe("")
    assert result["metadata_imported"] is True and result["error"] == ["spec", "minAvailable"]


MIME_PROBE = r"""
import json, sys
skip = sys.argv[1] == "skip"
if skip:
    from member_agent.agent_cmd import skip_system_mime_types
    skip_system_mime_types()
import mimetypes
from aiohttp import web  # noqa: F401 - builds aiohttp's MimeTypes()
from aiohttp.web_fileresponse import CONTENT_TYPES, ENCODING_EXTENSIONS
read_at_import = mimetypes._db is not None
print(json.dumps({"system_files_read_at_import": read_at_import, "aiohttp_types": CONTENT_TYPES.types_map[True],
                  "encodings": dict(ENCODING_EXTENSIONS), "guess": mimetypes.guess_type("x.woff2"),
                  "known": len(mimetypes.types_map)}))
"""


def _mime_probe(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", MIME_PROBE, mode], capture_output=True, text=True, check=True,
                         timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_aiohttp_web_is_imported_without_reading_the_system_mime_types() -> None:
    """The agent serves no files: importing aiohttp.web no longer fills mimetypes' global tables from
    /etc/mime.types (~0.35 MiB); aiohttp's own table and what mimetypes answers later are unchanged."""
    skipped, plain = _mime_probe("skip"), _mime_probe("plain")
    assert skipped["system_files_read_at_import"] is False and plain["system_files_read_at_import"] is True
    assert {k: v for k, v in skipped.items() if k != "system_files_read_at_import"} == \
        {k: v for k, v in plain.items() if k != "system_files_read_at_import"}


def test_the_agent_command_imports_aiohttp_web_only_when_it_serves() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, member_agent.agent_cmd; "
                          "print('aiohttp.web_fileresponse' in sys.modules)"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
