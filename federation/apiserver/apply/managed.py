"""``metadata.managedFields``: who owns which field, kept on every write. Pure (the clock is passed in).

* create/update/patch (operation ``Update``): the writer's entry gains every field it added or
  changed; every other entry loses those fields and the ones it removed;
* apply (operation ``Apply``): fields of the applied configuration another manager owns with a
  different live value are conflicts (409, kube's text) unless ``force``, which takes them over;
  fields this manager applied before and no longer does are removed from the object unless
  someone else still owns them.

A request that sets ``managedFields`` itself (kubectl's client-side -> server-side migration
rewrites them with a JSON patch) gets them as written.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson

from federation.apiserver import status as st
from federation.apiserver.apply.fields import (
    Path,
    field_set,
    from_fields_v1,
    get,
    merge,
    path_string,
    remove,
    to_fields_v1,
)
from federation.apiserver.apply.list_types import lists_of

Obj = dict[str, Any]


@dataclass(frozen=True)
class Manager:
    """The writer of one request: kube's (manager, operation, subresource) identity."""

    name: str
    operation: str = "Update"
    subresource: str = ""


def _entries(obj: Obj) -> list[Obj]:
    return [e for e in (obj.get("metadata") or {}).get("managedFields") or [] if isinstance(e, dict)]


def _same(entry: Obj, who: Manager) -> bool:
    return (entry.get("manager") == who.name and entry.get("operation") == who.operation
            and (entry.get("subresource") or "") == who.subresource)


def _entry(who: Manager, api_version: str, now: str, paths: set[Path]) -> Obj:
    entry: Obj = {"manager": who.name, "operation": who.operation, "apiVersion": api_version, "time": now,
                  "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}
    if who.subresource:
        entry["subresource"] = who.subresource
    return entry


def _rebuild(entries: list[tuple[Obj, set[Path]]], who: Manager, mine: set[Path], api_version: str,
             now: str) -> list[Obj]:
    out: list[Obj] = []
    placed = False
    for entry, paths in entries:
        if _same(entry, who):
            out.append(_entry(who, api_version, now, mine))
            placed = True
        elif paths:
            out.append(dict(entry, fieldsV1=to_fields_v1(paths)))
    if not placed and mine:
        out.append(_entry(who, api_version, now, mine))
    return out


def _decoded(obj: Obj) -> list[tuple[Obj, set[Path]]]:
    return [(e, from_fields_v1(e.get("fieldsV1") or {})) for e in _entries(obj)]


def record_update(old: Obj | None, new: Obj, who: Manager, now: str, has_status: bool) -> None:
    """Set ``new``'s managedFields after an Update-operation write (create when ``old`` is None)."""
    new_meta = new.setdefault("metadata", {})
    if old is not None and "managedFields" in new_meta and new_meta["managedFields"] != (
            old.get("metadata") or {}).get("managedFields"):
        return  # written explicitly (kubectl's migration): taken as given
    before = field_set(old, who.subresource, has_status) if old is not None else set()
    after = field_set(new, who.subresource, has_status)
    changed = {p for p in after if p not in before or get(old, p) != get(new, p)} if old is not None else after
    gone = before - after
    entries = _decoded(old) if old is not None else []
    if not changed and not gone:
        new_meta["managedFields"] = copy.deepcopy((old or {}).get("metadata", {}).get("managedFields")) or []
        if not new_meta["managedFields"]:
            new_meta.pop("managedFields")
        return
    trimmed = [(e, paths if _same(e, who) else paths - changed - gone) for e, paths in entries]
    mine = next((paths for e, paths in trimmed if _same(e, who)), set())
    mine = (mine - gone) | changed
    new_meta["managedFields"] = _rebuild(trimmed, who, mine, new["apiVersion"], now)


def conflict_error(conflicts: list[tuple[Obj, Path]]) -> st.ApiError:
    def who(entry: Obj) -> str:
        text = f'"{entry.get("manager")}"'
        if entry.get("subresource"):
            text += f' with subresource "{entry["subresource"]}"'
        if entry.get("operation") == "Update":
            text += f' using {entry.get("apiVersion")}' + (f' at {entry["time"]}' if entry.get("time") else "")
        return text

    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {who(e)}", "field": path_string(p)}
              for e, p in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {who(entry)}: {path_string(path)}"
    else:
        lines: list[str] = []
        for label in sorted({who(e) for e, _ in conflicts}):
            lines.append(f"conflicts with {label}:")
            lines += [f"- {path_string(p)}" for e, p in conflicts if who(e) == label]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return st.ApiError(409, "Conflict", message, {"causes": causes})


def apply(live: Obj, config: Obj, who: Manager, force: bool, now: str, has_status: bool) -> Obj:
    """The object after ``who`` applies ``config`` to ``live`` (managedFields included)."""
    applied = field_set(config, who.subresource, has_status)
    entries = _decoded(live)
    conflicts = []
    for entry, paths in entries:
        if _same(entry, who):
            continue
        for path in sorted(paths & applied):
            live_value, wanted = get(live, path), get(config, path)
            if live_value[0] and live_value != wanted and _is_leaf(path, paths):
                conflicts.append((entry, path))
    if conflicts and not force and who.name == "kubectl" and _upgrades_client_side_apply(live, conflicts, has_status):
        force = True
    if conflicts and not force:
        raise conflict_error(conflicts)
    taken = {p for _, p in conflicts}
    others = [(e, paths - taken if not _same(e, who) else paths) for e, paths in entries]
    previous = next((paths for e, paths in others if _same(e, who)), set())
    result = copy.deepcopy(live)
    kept_by_others = set().union(*(paths for e, paths in others if not _same(e, who))) if others else set()
    for path in sorted(previous - applied, key=len, reverse=True):
        if not any(q[:len(path)] == path for q in kept_by_others):
            remove(result, path)
    body = {k: v for k, v in config.items() if k != "metadata"}
    if who.subresource == "status":
        body = {"status": config["status"]} if "status" in config else {}
    elif has_status:
        body.pop("status", None)
    lists = lists_of(config["apiVersion"], config["kind"])
    result = merge(result, body, lists)
    meta_config = {k: v for k, v in (config.get("metadata") or {}).items()
                   if k in ("labels", "annotations", "finalizers", "ownerReferences")}
    result["metadata"] = merge(result.get("metadata") or {}, meta_config, lists, ("metadata",))
    result["metadata"]["managedFields"] = _rebuild(others, who, applied, config["apiVersion"], now)
    return result


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _upgrades_client_side_apply(live: Obj, conflicts: list[tuple[Obj, Path]], has_status: bool) -> bool:
    """kube's lastAppliedManager: ``kubectl apply --server-side`` on an object kubectl applied
    client-side takes over the fields of the last-applied configuration without conflicts, as
    long as the live object still holds those values."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return False
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(last, dict):
        return False
    allowed = field_set(last, "", has_status)
    if any(get(last, p) != get(live, p) for p in allowed if _is_leaf(p, allowed) and get(last, p)[1] != {}):
        return False
    return all(path in allowed for _, path in conflicts)


def _is_leaf(path: Path, paths: set[Path]) -> bool:
    return not any(len(q) > len(path) and q[:len(path)] == path for q in paths)


def new_object(config: Obj, who: Manager, now: str, has_status: bool) -> Obj:
    """The object an apply creates (no live object yet)."""
    obj = copy.deepcopy(config)
    obj.setdefault("metadata", {})["managedFields"] = [_entry(who, config["apiVersion"], now,
                                                              field_set(config, who.subresource, has_status))]
    return obj

