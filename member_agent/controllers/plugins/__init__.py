"""Volcano's job controller plugins (volcano.md §9.3), one module each.

:func:`load_plugins` turns ``spec.plugins`` into plugin instances, in the order written,
adding the plugins Volcano's admission would add (pytorch needs svc; mpi needs svc and ssh)
and running ``hcclrank`` last because it reads the ``RANK`` others set.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from member_agent.controllers.job_view import JobView
from member_agent.controllers.plugins.base import JobPlugin, KeySource, PluginContext, PluginError, has_task
from member_agent.controllers.plugins.env import EnvPlugin
from member_agent.controllers.plugins.hcclrank import HcclRankPlugin
from member_agent.controllers.plugins.mpi import MpiPlugin
from member_agent.controllers.plugins.pytorch import PytorchPlugin
from member_agent.controllers.plugins.ssh import SshPlugin
from member_agent.controllers.plugins.svc import SvcPlugin
from member_agent.controllers.plugins.tensorflow import TensorflowPlugin
from policies.lru import LRU

REGISTRY: dict[str, type[JobPlugin]] = {
    cls.NAME: cls
    for cls in (EnvPlugin, SvcPlugin, SshPlugin, PytorchPlugin, MpiPlugin, TensorflowPlugin, HcclRankPlugin)
}
IMPLIED: dict[str, tuple[str, ...]] = {"pytorch": ("svc",), "mpi": ("svc", "ssh")}
RUN_LAST = ("hcclrank",)

__all__ = ["REGISTRY", "JobPlugin", "KeySource", "PluginContext", "PluginError", "load_plugins", "master_task",
           "plugin_context"]


#: Plugin instances by the arguments they were made from: plugins keep nothing but their parsed
#: flags, and every pass of every job asks again (most jobs ask the same).
_LOADED: LRU[Any, tuple[JobPlugin, ...]] = LRU(64)


def load_plugins(job: JobView, defaults: Optional[Mapping[str, list[str]]] = None) -> list[JobPlugin]:
    """Instances for the job's plugins; raise :class:`PluginError` for an unknown name or flag."""
    key = (tuple((name, tuple(args)) for name, args in (defaults or {}).items()),
           tuple((name, tuple(args)) for name, args in job.plugins.items()))
    hit = _LOADED.get(key)
    if hit is None:
        hit = tuple(_load_plugins(job, defaults))  # an error raises every time
        _LOADED.put(key, hit)
    return list(hit)


def _load_plugins(job: JobView, defaults: Optional[Mapping[str, list[str]]]) -> list[JobPlugin]:
    wanted: dict[str, list[str]] = dict(defaults or {})
    wanted.update(job.plugins)
    for name in list(wanted):
        for implied in IMPLIED.get(name, ()):
            wanted.setdefault(implied, [])
    ordered = [n for n in wanted if n not in RUN_LAST] + [n for n in RUN_LAST if n in wanted]
    plugins: list[JobPlugin] = []
    for name in ordered:
        cls = REGISTRY.get(name)
        if cls is None:
            raise PluginError(name, f"unknown plugin (supported: {', '.join(sorted(REGISTRY))})")
        plugins.append(cls(wanted[name]))
    return plugins


def master_task(job: JobView, plugins: Sequence[JobPlugin]) -> Optional[str]:
    """The task whose replica 0 leads: the pytorch/mpi ``--master``, a task named master, or the first."""
    for plugin in plugins:
        if isinstance(plugin, (PytorchPlugin, MpiPlugin)) and has_task(job, plugin.text("master")):
            return plugin.text("master")
    tasks = [name for name, total in job.federated_tasks() if total > 0]
    if "master" in tasks:
        return "master"
    return tasks[0] if tasks else None


def plugin_context(job: JobView, plugins: Sequence[JobPlugin], existing: dict[tuple[str, str], dict[str, Any]] | None = None,
                   key_source: Optional[KeySource] = None) -> PluginContext:
    return PluginContext(job=job, existing=existing or {}, key_source=key_source,
                         master_task=master_task(job, plugins))
