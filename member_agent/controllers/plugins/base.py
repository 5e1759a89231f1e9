"""What a job plugin is, and the small pod-editing helpers every plugin shares (volcano.md §9.3).

A plugin sees the pod as a wire dict while it is being built (before validation into a
:class:`~policies.models.core.Pod`), adds env vars, ports, volumes, and declares the objects
it owns (Service, ConfigMap, Secret, NetworkPolicy) as wire dicts the agent creates.
Arguments are Go-flag style strings from ``spec.plugins.<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Optional, Union

from member_agent.controllers import naming
from member_agent.controllers.job_view import JobView

WireObject = dict[str, Any]
FlagValue = Union[str, int, bool]
#: Returns ``(private key PEM, public key in OpenSSH format)``.
KeySource = Callable[[], tuple[str, str]]


class PluginError(ValueError):
    """A plugin cannot run with these arguments; reported as a ``PluginError`` job event."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"plugin {plugin}: {message}")
        self.plugin = plugin


@dataclass(frozen=True)
class PluginContext:
    job: JobView
    #: Plugin-owned objects that already exist, by ``(kind, name)`` (their wire form).
    existing: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    key_source: Optional[KeySource] = None
    #: Task whose replica 0 is the job's master (the pytorch/mpi ``--master`` mapping).
    master_task: Optional[str] = None


def parse_flags(plugin: str, args: list[str], defaults: Mapping[str, FlagValue]) -> dict[str, FlagValue]:
    """Parse ``--name=value`` / ``--name value`` / ``--flag`` (Go's flag package syntax)."""
    values: dict[str, FlagValue] = dict(defaults)
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            raise PluginError(plugin, f"unexpected argument {arg!r} (flags look like --name=value)")
        name, has_value, text = arg.lstrip("-").partition("=")
        if name not in defaults:
            raise PluginError(plugin, f"unknown flag --{name} (known: {', '.join('--' + k for k in defaults)})")
        default = defaults[name]
        if isinstance(default, bool):
            if not has_value or text.lower() in ("true", "1", "t"):
                values[name] = True
            elif text.lower() in ("false", "0", "f"):
                values[name] = False
            else:
                raise PluginError(plugin, f"--{name} takes true or false, got {text!r}")
        else:
            if not has_value:
                if i + 1 >= len(args):
                    raise PluginError(plugin, f"--{name} needs a value")
                i += 1
                text = args[i]
            if isinstance(default, int):
                if not text.lstrip("-").isdigit():
                    raise PluginError(plugin, f"--{name} takes an integer, got {text!r}")
                values[name] = int(text)
            else:
                values[name] = text
        i += 1
    return values


class JobPlugin:
    """Base class: subclasses set ``NAME`` and ``FLAGS`` and override the hooks they need."""

    NAME: ClassVar[str] = ""
    FLAGS: ClassVar[Mapping[str, FlagValue]] = {}

    def __init__(self, args: list[str]) -> None:
        self.flags = parse_flags(self.NAME, list(args), self.FLAGS)

    def text(self, name: str) -> str:
        return str(self.flags[name])

    def number(self, name: str) -> int:
        return int(self.flags[name])

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        """Edit a pod being created."""

    def on_job_add(self, ctx: PluginContext) -> list[WireObject]:
        """Objects this plugin needs, created when the job is initiated (or after a restart)."""
        return []

    def on_job_update(self, ctx: PluginContext) -> list[WireObject]:
        """Objects to refresh on a resync once the plugin's objects exist (default: none)."""
        return []

    def owned_objects(self, ctx: PluginContext) -> list[tuple[str, str]]:
        """``(kind, name)`` of the objects to delete when the job is killed."""
        return [(obj["kind"], obj["metadata"]["name"]) for obj in self.on_job_add(ctx)]

    @property
    def controlled_resource(self) -> tuple[str, str]:
        """The ``status.controlledResources`` entry (``plugin-svc: svc``)."""
        return (f"plugin-{self.NAME}", self.NAME)


# --------------------------------------------------------------------------- pod helpers


def pod_index(pod: WireObject) -> int:
    """The pod's index within its task, parsed from the name as Volcano does (global for shares)."""
    index = naming.index_from_pod_name(pod["metadata"]["name"])
    return index if index is not None else 0


def pod_task(pod: WireObject) -> str:
    return str(pod["metadata"].get("annotations", {}).get(naming.TASK_SPEC, ""))


def containers(pod: WireObject, init: bool = True) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    found = list(spec.get("containers") or [])
    if init:
        found += list(spec.get("initContainers") or [])
    return found


def add_env(container: dict[str, Any], name: str, value: Optional[str] = None,
            value_from: Optional[dict[str, Any]] = None) -> None:
    """Append an env var unless the container already sets that name (the user's value wins)."""
    env = container.setdefault("env", [])
    if any(e.get("name") == name for e in env):
        return
    entry: dict[str, Any] = {"name": name}
    if value_from is not None:
        entry["valueFrom"] = value_from
    else:
        entry["value"] = value if value is not None else ""
    env.append(entry)


def add_port(container: dict[str, Any], name: str, port: int) -> None:
    ports = container.setdefault("ports", [])
    if any(p.get("name") == name or p.get("containerPort") == port for p in ports):
        return
    ports.append({"name": name, "containerPort": port, "protocol": "TCP"})


def add_volume(pod: WireObject, volume: dict[str, Any]) -> None:
    volumes = pod.setdefault("spec", {}).setdefault("volumes", [])
    if not any(v.get("name") == volume["name"] for v in volumes):
        volumes.append(volume)


def add_mount(container: dict[str, Any], mount: dict[str, Any]) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == mount["mountPath"] for m in mounts):
        mounts.append(mount)


def owner_reference(job: JobView) -> dict[str, Any]:
    return {"apiVersion": naming.JOB_API_VERSION, "kind": naming.JOB_KIND, "name": job.name,
            "uid": job.uid, "controller": True, "blockOwnerDeletion": True}


def owned_metadata(job: JobView, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": job.namespace, "ownerReferences": [owner_reference(job)]}


# --------------------------------------------------------------------------- hosts of the federated job


def subdomain_of(job: JobView, task: str) -> str:
    spec = job.task(task)
    return (spec.template_subdomain if spec else None) or job.name


def host_of(job: JobView, task: str, index: int) -> str:
    """DNS name of replica ``index`` (global) of ``task``: ``<job>-<task>-<i>.<job>``."""
    spec = job.task(task)
    hostname = (spec.template_hostname if spec else None) or naming.pod_name(job.name, task, index)
    return naming.host_name(hostname, subdomain_of(job, task))


def task_hosts(job: JobView, task: str) -> list[str]:
    """Every replica's host across the whole federated job; a template hostname is one host."""
    spec = job.task(task)
    if spec is not None and spec.template_hostname:
        return [naming.host_name(spec.template_hostname, subdomain_of(job, task))]
    return [host_of(job, task, i) for i in range(job.federated_total(task))]


def has_task(job: JobView, task: str) -> bool:
    return any(name == task for name, _ in job.federated_tasks())
