"""The shipped manifests run the store and the agents safely: etcd speaks mutual TLS to its clients and
between its members, the federation reaches it with --etcd-cafile/--etcd-certfile/--etcd-keyfile, every
certificate file a flag names is a key of the Secret mounted there, and the agent's unauthenticated
plain-HTTP endpoints (/status, POST /sim/nodes) listen on loopback only.

Each rule is checked on the rendered manifests, and on a broken copy that must be caught (the table)."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from tests.deploy.test_render import DEPLOY, render

ETCD_URL_FLAGS = ("--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls",
                  "--initial-advertise-peer-urls", "--initial-cluster")
ETCD_FILE_FLAGS = ("--trusted-ca-file", "--cert-file", "--key-file", "--peer-trusted-ca-file", "--peer-cert-file",
                   "--peer-key-file")
ETCD_ON_FLAGS = ("--client-cert-auth", "--peer-client-cert-auth")
FEDERATION_FILE_FLAGS = ("--etcd-cafile", "--etcd-certfile", "--etcd-keyfile")


def _flags(container: dict[str, Any]) -> dict[str, str]:
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return dict(w.split("=", 1) for w in words if w.startswith("--") and "=" in w)


def _only(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name} rendered {len(found)} times"
    return found[0]


def _file_problems(pod: dict[str, Any], container: dict[str, Any], secrets: dict[str, dict[str, Any]],
                   flags: tuple[str, ...], where: str) -> list[str]:
    """Each flag is set, and names a key of a Secret mounted at that file's directory."""
    problems = []
    mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    given = _flags(container)
    for flag in flags:
        path = given.get(flag)
        if not path:
            problems.append(f"{where}: {flag} is not set")
            continue
        directory, _, key = path.rpartition("/")
        secret_name = (volumes.get(mounts.get(directory, ""), {}).get("secret") or {}).get("secretName")
        secret = secrets.get(str(secret_name))
        if secret is None:
            problems.append(f"{where}: {flag}={path}: no Secret is mounted at {directory}")
        elif key not in {**(secret.get("data") or {}), **(secret.get("stringData") or {})}:
            problems.append(f"{where}: {flag}={path}: Secret {secret_name} has no key {key!r}")
    return problems


def etcd_problems(objects: list[dict[str, Any]]) -> list[str]:
    sts = _only(objects, "StatefulSet", "caldera-etcd")
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    flags = _flags(container)
    where = "StatefulSet/caldera-etcd"
    problems = []
    for flag in ETCD_URL_FLAGS:
        urls = [part.split("=", 1)[-1] for part in flags.get(flag, "").split(",")]
        if not flags.get(flag) or any(not url.startswith("https://") for url in urls):
            problems.append(f"{where}: {flag}={flags.get(flag)!r}: every URL must be https://")
    for flag in ETCD_ON_FLAGS:
        if flags.get(flag) != "true":
            problems.append(f"{where}: {flag} must be true (mutual TLS)")
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    return problems + _file_problems(pod, container, secrets, ETCD_FILE_FLAGS, where)


def federation_problems(objects: list[dict[str, Any]]) -> list[str]:
    deployment = _only(objects, "Deployment", "caldera-federation")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    where = "Deployment/caldera-federation"
    servers = _flags(container).get("--etcd-servers", "")
    problems = []
    if not servers or any(not url.startswith("https://") for url in servers.split(",")):
        problems.append(f"{where}: --etcd-servers={servers!r}: every URL must be https://")
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    return problems + _file_problems(pod, container, secrets, FEDERATION_FILE_FLAGS, where)


def agent_problems(objects: list[dict[str, Any]]) -> list[str]:
    deployment = _only(objects, "Deployment", "caldera-agent")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    where = "Deployment/caldera-agent"
    problems = []
    listen = _flags(container).get("--listen", "127.0.0.1:8090")  # the agent's own default is loopback
    host, _, port = listen.rpartition(":")
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        problems.append(f"{where}: --listen={listen}: /status and POST /sim/nodes are unauthenticated; "
                        f"bind them to 127.0.0.1")
    exposed = {str(p.get("containerPort")) for p in container.get("ports") or []}
    if port in exposed:
        problems.append(f"{where}: containerPort {port} exposes the loopback-only --listen port")
    names = {p.get("name"): str(p.get("containerPort")) for p in container.get("ports") or []}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        target = str(((container.get(probe) or {}).get("httpGet") or {}).get("port", ""))
        if target and names.get(target, target) == port:
            problems.append(f"{where}: {probe} targets the loopback-only port {port}; kubelet cannot reach it")
    if "--metrics-bind-address" not in _flags(container):
        problems.append(f"{where}: --metrics-bind-address is needed for /metrics (TokenReview, HTTPS)")
    return problems


def test_the_shipped_manifests_pass() -> None:
    ha = render(DEPLOY / "overlays" / "ha")
    assert etcd_problems(ha) == []
    assert federation_problems(ha) == []
    assert federation_problems(render(DEPLOY / "overlays" / "external-etcd")) == []
    assert agent_problems(render(DEPLOY / "overlays" / "agent-cluster-a")) == []


def _edit_container(objects: list[dict[str, Any]], kind: str, name: str, change: Any) -> list[dict[str, Any]]:
    broken = copy.deepcopy(objects)
    change(_only(broken, kind, name)["spec"]["template"]["spec"]["containers"][0])
    return broken


def _replace_arg(old: str, new: str) -> Any:
    def change(container: dict[str, Any]) -> None:
        for field in ("command", "args"):
            container[field] = [new if w.startswith(old) else w for w in container.get(field) or []]
    return change


def _drop_secret_key(objects: list[dict[str, Any]], secret: str, key: str) -> list[dict[str, Any]]:
    broken = copy.deepcopy(objects)
    del _only(broken, "Secret", secret)["stringData"][key]
    return broken


ETCD = ("StatefulSet", "caldera-etcd")
FED = ("Deployment", "caldera-federation")
AGENT = ("Deployment", "caldera-agent")
BROKEN = [  # (what, overlay, how to break it, checker, the problem's words)
    ("plain-HTTP peers", "ha", ETCD, _replace_arg("--listen-peer-urls", "--listen-peer-urls=http://0.0.0.0:2380"),
     etcd_problems, "--listen-peer-urls"),
    ("plain-HTTP peer in the initial cluster", "ha", ETCD,
     _replace_arg("--initial-cluster=", "--initial-cluster=caldera-etcd-0=http://caldera-etcd-0:2380"),
     etcd_problems, "--initial-cluster"),
    ("no peer certificate auth", "ha", ETCD, _replace_arg("--peer-client-cert-auth", "--peer-client-cert-auth=false"),
     etcd_problems, "--peer-client-cert-auth must be true"),
    ("no client certificate auth", "ha", ETCD, _replace_arg("--client-cert-auth", "--client-cert-auth=false"),
     etcd_problems, "--client-cert-auth must be true"),
    ("a peer key outside the mounted Secret", "ha", ETCD, _replace_arg("--peer-key-file", "--peer-key-file=/tmp/p.key"),
     etcd_problems, "no Secret is mounted at /tmp"),
    ("plain-HTTP etcd for the federation", "ha", FED,
     _replace_arg("--etcd-servers", "--etcd-servers=http://caldera-etcd:2379"), federation_problems, "--etcd-servers"),
    ("no client certificate for the federation", "ha", FED, _replace_arg("--etcd-certfile", "--etcd-x=1"),
     federation_problems, "--etcd-certfile is not set"),
    ("the agent on every interface", "agent-cluster-a", AGENT, _replace_arg("--listen=", "--listen=0.0.0.0:8090"),
     agent_problems, "bind them to 127.0.0.1"),
    ("the loopback port exposed", "agent-cluster-a", AGENT,
     lambda c: c["ports"].append({"name": "http", "containerPort": 8090}), agent_problems, "containerPort 8090"),
    ("a probe on the loopback port", "agent-cluster-a", AGENT,
     lambda c: c["livenessProbe"]["httpGet"].update(port=8090), agent_problems, "livenessProbe"),
]


@pytest.mark.parametrize(("what", "overlay", "target", "change", "check", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_copy_is_caught(what: str, overlay: str, target: tuple[str, str], change: Any, check: Any,
                                 words: str) -> None:
    problems = check(_edit_container(render(DEPLOY / "overlays" / overlay), *target, change))
    assert any(words in p for p in problems), f"{what}: {problems}"


def test_a_certificate_missing_from_its_secret_is_caught() -> None:
    ha = render(DEPLOY / "overlays" / "ha")
    assert any("Secret caldera-etcd-server has no key 'peer.crt'" in p
               for p in etcd_problems(_drop_secret_key(ha, "caldera-etcd-server", "peer.crt")))
    assert any("Secret caldera-etcd-client has no key 'client.key'" in p
               for p in federation_problems(_drop_secret_key(ha, "caldera-etcd-client", "client.key")))
