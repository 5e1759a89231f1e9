"""``hcclrank`` plugin: Ascend HCCL rank annotation (volcano.md §9.3).

Pod annotation ``hccl/rankIndex`` = the ``RANK`` env var when another plugin set one, else
the master's index, or master replicas + the worker's index (global for shares).
"""

from __future__ import annotations

from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    containers,
    pod_index,
    pod_task,
)

RANK_ANNOTATION = "hccl/rankIndex"


class HcclRankPlugin(JobPlugin):
    NAME = "hcclrank"
    FLAGS = {"master": "master", "worker": "worker"}

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        rank: str | None = None
        for container in containers(pod, init=False):
            for env in container.get("env") or []:
                if env.get("name") == "RANK" and env.get("value") is not None:
                    rank = str(env["value"])
                    break
            if rank is not None:
                break
        task = pod_task(pod)
        if rank is None:
            if task == self.text("master"):
                rank = str(pod_index(pod))
            elif task == self.text("worker"):
                rank = str(ctx.job.federated_total(self.text("master")) + pod_index(pod))
            else:
                return
        pod["metadata"].setdefault("annotations", {})[RANK_ANNOTATION] = rank
