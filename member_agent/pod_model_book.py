"""The pod models ``JobRun`` keeps between passes, one per pod uid with the resourceVersion it is
the model of: a pass validates only the pods that changed since the last one.

A writer that made a pod's new version itself and knows its model (the replay's own pod writes,
:mod:`simulator.pod_models`) carries that model here, and the next pass validates nothing. Every
kept model equals ``Pod.model_validate`` of its version (``tests/agent/test_job_run_models.py``,
``tests/simulate/test_pod_models.py``).
"""

from __future__ import annotations

from typing import Mapping, Optional

from member_agent.cluster.gateway import Obj
from policies.models.core import Pod


class PodModelBook:
    """Pod uid -> (resourceVersion, model) of the pods a JobRun observed or was handed."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        self._models: dict[str, tuple[str, Pod]] = {}

    def model(self, pod: Obj) -> Pod:
        """The model of this version of ``pod``: the kept one, else a validation (then kept)."""
        model = self.kept(pod)
        if model is None:
            model = Pod.model_validate(pod)
            self.carry(pod, model)
        return model

    def kept(self, pod: Obj) -> Optional[Pod]:
        """The model kept for this version of ``pod`` (its uid and resourceVersion), if any."""
        uid, version = pod_version(pod)
        cached = self._models.get(uid)
        return cached[1] if cached is not None and cached[0] == version else None

    def carry(self, pod: Obj, model: Pod) -> None:
        """Keep ``model`` as the model of this version of ``pod``."""
        uid, version = pod_version(pod)
        self._models[uid] = (version, model)

    def keep_only(self, names: Mapping[str, Pod]) -> None:
        """Forget the models of pods a pass no longer observed (by name: a pod of that name made
        again has a new uid, and its old model must not stay kept for ever)."""
        self._models = {uid: entry for uid, entry in self._models.items() if entry[1].metadata.name in names}


def pod_version(pod: Obj) -> tuple[str, str]:
    """(uid, resourceVersion) of a pod's wire form: the key and version of its kept model."""
    md = pod.get("metadata") or {}
    return str(md.get("uid") or md.get("name")), str(md.get("resourceVersion") or "")
