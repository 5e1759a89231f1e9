"""``tensorflow`` plugin: ``TF_CONFIG`` for tf.distribute (volcano.md §9.3).

``{"cluster": {"ps": [...], "worker": [...], "chief": [...], "evaluator": [...]},
"task": {"type": ..., "index": ...}}`` with hosts ``<pod>.<job>:<port>`` over the whole
federated job. A job of one task with one replica is stand-alone and gets nothing.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from member_agent.controllers import naming
from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_env,
    containers,
    pod_index,
    pod_task,
)

ROLES = ("ps", "worker", "chief", "evaluator")


class TensorflowPlugin(JobPlugin):
    NAME = "tensorflow"
    FLAGS = {"ps": "ps", "worker": "worker", "chief": "chief", "evaluator": "evaluator", "port": 2222}

    def role_of(self, task: str) -> Optional[str]:
        for role in ROLES:
            if self.text(role) == task:
                return role
        return None

    def cluster_spec(self, ctx: PluginContext) -> dict[str, list[str]]:
        cluster: dict[str, list[str]] = {}
        port = self.number("port")
        for role in ROLES:
            task = self.text(role)
            total = ctx.job.federated_total(task)
            if total:
                cluster[role] = [f"{naming.pod_name(ctx.job.name, task, i)}.{ctx.job.name}:{port}" for i in range(total)]
        return cluster

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        tasks = ctx.job.federated_tasks()
        if len(tasks) == 1 and tasks[0][1] == 1:
            return
        role = self.role_of(pod_task(pod))
        if role is None:
            return
        config: dict[str, Any] = {"cluster": self.cluster_spec(ctx), "task": {"type": role, "index": pod_index(pod)}}
        text = json.dumps(config, separators=(",", ":"))
        for container in containers(pod, init=False):
            add_env(container, "TF_CONFIG", text)
