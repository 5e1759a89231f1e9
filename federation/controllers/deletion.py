"""Deletion: a deleted Job takes its ResourceBinding and its Works with it.

* The binding carries an ownerReference to its Job (same namespace), so the API server's
  garbage collector removes it; the placement controller also deletes it when it sees the
  Job gone (for servers without a collector).
* Works live in other namespaces (``karmada-es-<cluster>``), where ownerReferences to a
  namespaced Job are not allowed, so they are found through their ``caldera.io/job`` label
  (:class:`WorkIndex`) and deleted by the dispatch controller: all of them when the Job is
  gone, those of an older Job of the same name (``caldera.io/job-uid`` differs), and those of
  clusters the binding no longer lists. Agents see the Work deleted and tear the share down.
No finalizer is needed: a Job deleted while the controllers are down is cleaned up from the
informers' initial list (Works whose Job does not exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client as k8s

from federation.client import ResourceClient
from federation.controllers import common as c
from federation.controllers.runner import Informer, is_not_found

Obj = dict[str, Any]
Ref = tuple[str, str]  # (namespace, name) of a Work
Key = tuple[str, str]  # (namespace, name) of a Job


def job_of(work: Mapping[str, Any]) -> Key | None:
    """The Job a Work belongs to, from its ``caldera.io/job`` label (``<namespace>.<name>``)."""
    label = ((work.get("metadata") or {}).get("labels") or {}).get(c.JOB_LABEL)
    if not label or "." not in label:
        return None
    namespace, name = label.split(".", 1)  # a namespace is a DNS label: no dots
    return (namespace, name)


class WorkIndex:
    """Job -> its Works, maintained from the Work informer's events."""

    def __init__(self) -> None:
        self._by_job: dict[Key, set[Ref]] = {}

    def update(self, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> Key | None:
        meta = obj.get("metadata") or {}
        ref = (meta.get("namespace", ""), meta.get("name", ""))
        previous = job_of(old) if old is not None else None
        if previous is not None:
            self._discard(previous, ref)
        key = job_of(obj)
        if key is not None:
            if kind == "DELETED":
                self._discard(key, ref)
            else:
                self._by_job.setdefault(key, set()).add(ref)
        return key

    def _discard(self, key: Key, ref: Ref) -> None:
        refs = self._by_job.get(key)
        if refs is not None:
            refs.discard(ref)
            if not refs:
                del self._by_job[key]

    def works_of(self, key: Key) -> set[Ref]:
        return set(self._by_job.get(key, ()))

    def jobs(self) -> list[Key]:
        return list(self._by_job)


async def delete_works(rc: ResourceClient, works: Mapping[Ref, Obj], cache: Informer) -> None:
    """Delete ``works`` (404 counts as done), dropping them from the cache at once."""
    for (namespace, name), work in sorted(works.items()):
        if (work.get("metadata") or {}).get("deletionTimestamp"):
            continue
        try:
            await rc.delete(c.WORKS, name, namespace)
        except k8s.ApiException as err:
            if not is_not_found(err):
                raise
        cache.store.pop((namespace, name), None)
