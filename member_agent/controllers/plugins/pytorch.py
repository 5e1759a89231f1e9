"""``pytorch`` plugin: torch.distributed rendezvous env (volcano.md §9.3).

Master and worker pods get ``MASTER_ADDR`` (replica 0 of the master task), ``MASTER_PORT``,
``WORLD_SIZE`` and ``RANK``, plus the ``pytorchjob-port`` container port. Ranks put the
master replicas first: master ``i`` has rank ``i``, worker ``i`` has rank
``master replicas + i`` (Volcano's ``i + 1`` for the usual single master).

For a share of a federated job the indices are global and ``WORLD_SIZE`` is the federated
job's (``caldera.io/world-size``, else the federated master + worker totals).
"""

from __future__ import annotations

from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_env,
    add_port,
    containers,
    has_task,
    host_of,
    pod_index,
    pod_task,
)

PORT_NAME = "pytorchjob-port"
WAIT_CONTAINER = "wait-for-master"


class PytorchPlugin(JobPlugin):
    NAME = "pytorch"
    FLAGS = {
        "master": "master",
        "worker": "worker",
        "port": 23456,
        "wait-master-enabled": False,
        "wait-master-timeout": 300,
        "wait-master-image": "busybox:1.36.1",
    }

    def world_size(self, ctx: PluginContext) -> int:
        if ctx.job.world_size is not None:
            return ctx.job.world_size
        return ctx.job.federated_total(self.text("master")) + ctx.job.federated_total(self.text("worker"))

    def rank(self, ctx: PluginContext, task: str, index: int) -> int:
        if task == self.text("worker"):
            return ctx.job.federated_total(self.text("master")) + index
        return index

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        master, worker = self.text("master"), self.text("worker")
        task = pod_task(pod)
        if not has_task(ctx.job, master) or task not in (master, worker):
            return
        index = pod_index(pod)
        address = host_of(ctx.job, master, 0)
        port = self.number("port")
        env = {
            "MASTER_ADDR": address,
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(self.world_size(ctx)),
            "RANK": str(self.rank(ctx, task, index)),
        }
        for container in containers(pod, init=False):
            for name, value in env.items():
                add_env(container, name, value)
            add_port(container, PORT_NAME, port)
        if task == worker and self.flags["wait-master-enabled"]:
            timeout = self.number("wait-master-timeout")
            script = (f"end=$(( $(date +%s) + {timeout} )); until nc -z {address} {port}; do "
                      f"[ $(date +%s) -ge $end ] && exit 1; sleep 2; done")
            init = pod["spec"].setdefault("initContainers", [])
            if not any(c.get("name") == WAIT_CONTAINER for c in init):
                init.insert(0, {"name": WAIT_CONTAINER, "image": self.text("wait-master-image"),
                                "command": ["sh", "-c", script]})
