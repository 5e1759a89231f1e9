"""``svc`` plugin: stable DNS names for every replica (volcano.md §9.3).

Pods get ``hostname = <pod>`` and ``subdomain = <job>``; a headless Service ``<job>`` makes
``<pod>.<job>`` resolvable, a NetworkPolicy admits traffic only from the job's own pods, and
ConfigMap ``<job>-svc`` (mounted at ``/etc/volcano``) lists the hosts of every task:
``<task>.host`` (one per line, the MPI hostfile), ``VC_<TASK>_HOSTS`` and ``VC_<TASK>_NUM``.

For a share of a federated job the lists cover the **whole** job (global indices), so a
worker in one cluster knows its peers in the others. Resolving those names across clusters
needs multi-cluster DNS (MCS / Submariner), which is outside the agent.

Caldera extension: ``VC_MASTER_HOST``, the host of replica 0 of the master task (the
pytorch/mpi ``--master`` task, else a task named ``master``, else the first task), which the
seed's torchrun command uses as ``--master_addr``.
"""

from __future__ import annotations

from typing import Any

from member_agent.controllers import naming
from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_env,
    add_mount,
    add_volume,
    containers,
    host_of,
    owned_metadata,
    task_hosts,
)
from policies.lru import LRU
from policies.wire_objects import copy_wire

CONFIG_MOUNT_PATH = "/etc/volcano"
#: ConfigMaps made lately, by what they are made from (SvcPlugin._config_map)
_CONFIG_MAPS: LRU[Any, WireObject] = LRU(256)
MASTER_HOST_ENV = "VC_MASTER_HOST"


def config_map_name(job_name: str) -> str:
    return f"{job_name}-svc"


def hosts_env(task: str) -> str:
    return f"VC_{naming.env_task_key(task)}_HOSTS"


def num_env(task: str) -> str:
    return f"VC_{naming.env_task_key(task)}_NUM"


class SvcPlugin(JobPlugin):
    NAME = "svc"
    FLAGS = {"publish-not-ready-addresses": False, "disable-network-policy": False, "inject-hosts-env": True}

    def host_data(self, ctx: PluginContext) -> dict[str, str]:
        """The ConfigMap content: host files and env values for every task of the federated job."""
        data: dict[str, str] = {}
        for task, _ in ctx.job.federated_tasks():
            hosts = task_hosts(ctx.job, task)
            data[naming.host_file_key(task)] = "\n".join(hosts)
            data[hosts_env(task)] = ",".join(hosts)
            data[num_env(task)] = str(len(hosts))
        if ctx.master_task is not None:
            data[MASTER_HOST_ENV] = host_of(ctx.job, ctx.master_task, 0)
        return data

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        spec = pod.setdefault("spec", {})
        if not spec.get("hostname"):
            spec["hostname"] = pod["metadata"]["name"]
        if not spec.get("subdomain"):
            spec["subdomain"] = ctx.job.name
        name = config_map_name(ctx.job.name)
        add_volume(pod, {"name": name, "configMap": {"name": name}})
        env_names: list[str] = []
        if self.flags["inject-hosts-env"]:
            for task, _ in ctx.job.federated_tasks():
                env_names += [hosts_env(task), num_env(task)]
            if ctx.master_task is not None:
                env_names.append(MASTER_HOST_ENV)
        for container in containers(pod):
            add_mount(container, {"name": name, "mountPath": CONFIG_MOUNT_PATH})
            for env in env_names:
                add_env(container, env, value_from={"configMapKeyRef": {"name": name, "key": env}})

    def _config_map(self, ctx: PluginContext) -> WireObject:
        # Made again on every resync (on_job_update), from a handful of the view's facts: kept by
        # those facts (a task's replicas are its host list's length) and handed out as a copy.
        job = ctx.job
        key = job.derived.get(("svc-config-map-key", ctx.master_task))  # the facts are the spec's: once per spec
        if key is None:
            key = job.derived[("svc-config-map-key", ctx.master_task)] = (
                job.name, job.namespace, job.uid, ctx.master_task, tuple(job.federated_tasks()),
                tuple((t.name, t.template_hostname, t.template_subdomain) for t in job.tasks))
        made = _CONFIG_MAPS.get(key)
        if made is None:
            made = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": owned_metadata(job, config_map_name(job.name)),
                "data": self.host_data(ctx),
            }
            _CONFIG_MAPS.put(key, made)
        # A resync's ConfigMap equals the existing one (``ctx.existing``: the pass's own copies): that
        # one is handed out, an equal object, instead of copying the kept one on every pass.
        existing = ctx.existing.get(("ConfigMap", made["metadata"]["name"]))
        if type(existing) is dict and existing == made:
            return existing
        copied: WireObject = copy_wire(made)
        return copied

    def on_job_update(self, ctx: PluginContext) -> list[WireObject]:
        # Replicas may have changed: the host lists follow.
        return [self._config_map(ctx)]

    def _selector(self, ctx: PluginContext) -> dict[str, str]:
        return {naming.JOB_NAME: ctx.job.name, naming.JOB_NAMESPACE: ctx.job.namespace}

    def on_job_add(self, ctx: PluginContext) -> list[WireObject]:
        selector = self._selector(ctx)
        objects: list[WireObject] = [
            self._config_map(ctx),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": owned_metadata(ctx.job, ctx.job.name),
                "spec": {
                    "clusterIP": "None",
                    "selector": selector,
                    "publishNotReadyAddresses": bool(self.flags["publish-not-ready-addresses"]),
                    "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}],
                },
            },
        ]
        if not self.flags["disable-network-policy"]:
            policy: dict[str, Any] = {
                "podSelector": {"matchLabels": selector},
                "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
                "policyTypes": ["Ingress"],
            }
            objects.append({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": owned_metadata(ctx.job, ctx.job.name),
                "spec": policy,
            })
        return objects
