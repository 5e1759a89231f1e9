"""``mpi`` plugin: mpirun on the master reaches every worker (volcano.md §9.3).

Master containers get ``MPI_HOST``, the comma-joined worker hosts of the whole federated
job; every container and init container gets the ``mpijob-port`` port. The hostfile is the
svc plugin's ``/etc/volcano/<worker>.host`` (one host per line); mpi implies svc and ssh.
"""

from __future__ import annotations

from member_agent.controllers import naming
from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_env,
    add_port,
    containers,
    pod_task,
    task_hosts,
)
from member_agent.controllers.plugins.svc import CONFIG_MOUNT_PATH

PORT_NAME = "mpijob-port"


class MpiPlugin(JobPlugin):
    NAME = "mpi"
    FLAGS = {"master": "master", "worker": "worker", "port": 22}

    def hostfile_path(self) -> str:
        return f"{CONFIG_MOUNT_PATH}/{naming.host_file_key(self.text('worker'))}"

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        port = self.number("port")
        is_master = pod_task(pod) == self.text("master")
        workers = ",".join(task_hosts(ctx.job, self.text("worker")))
        for container in containers(pod):
            add_port(container, PORT_NAME, port)
        if is_master:
            for container in containers(pod, init=False):
                add_env(container, "MPI_HOST", workers)
