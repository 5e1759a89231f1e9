"""``env`` plugin: every container learns its replica's index (volcano.md §9.3).

``VC_TASK_INDEX`` and its legacy twin ``VK_TASK_INDEX`` come from the pod-name suffix, which
for a share of a federated job is the global index, so ranks are unique across clusters.
"""

from __future__ import annotations

from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_env,
    containers,
    pod_index,
)

TASK_INDEX_ENVS = ("VK_TASK_INDEX", "VC_TASK_INDEX")


class EnvPlugin(JobPlugin):
    NAME = "env"
    FLAGS = {}

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        index = str(pod_index(pod))
        for container in containers(pod):
            for name in TASK_INDEX_ENVS:
                add_env(container, name, index)
