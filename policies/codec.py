"""Manifests in, typed objects out (and back).

``decode_text`` / ``decode_path`` / ``decode_paths`` read multi-document YAML or JSON
(a directory is read recursively: ``*.yaml``, ``*.yml``, ``*.json``, in name order) and
return a :class:`DecodeResult`: every object that decoded, and one :class:`DocumentError`
per document that did not (decoding continues past a bad document). An error names the
file, the document (1-based), the line, apiVersion/kind/name and the field paths, which are
Kubernetes paths built from wire names (``spec.tasks[0].template.spec.containers[1]
.resources.limits.cpu``; map keys that are not plain words in brackets: ``limits[nvidia.com/gpu]``).

Documents that are someone else's kind (ServiceMonitor, Prometheus rule groups,
``batch/v1`` Jobs) become :class:`~policies.errors.NotACalderaKind` *warnings*; documents
that are bare fragments (a ``data:`` block, a ``plugins:`` block) are :class:`NotAnObject`
errors. Empty documents are skipped. ``dump`` writes objects back as YAML/JSON with
camelCase keys and no nulls; decode -> dump -> decode gives equal objects.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Optional, Sequence

import yaml
from pydantic import ValidationError

from policies.codec_paths import line_map, pydantic_field_errors
from policies.codec_yaml import first_content_line, parse_chunk, problem_line, split_documents, yaml_message
from policies.errors import (
    CalderaError,
    DecodeError,
    FieldError,
    NotACalderaKind,
    UnknownKind,
    ValidationFailed,
)
from policies.kinds import KINDS, known_kinds, lookup
from policies.models.meta import TypedObject

_PARENT = re.compile(r"(\.[^.\[\]]+|\[[^\]]*\])$|^[^.\[\]]+$")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class NotAnObject(DecodeError):
    """A document that parses but is a fragment, not a Kubernetes object."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        #: The parsed fragment, so callers can still check what it carries.
        self.data = data


@dataclass(frozen=True)
class Origin:
    """Where a document came from: file, 1-based document index, 1-based first line."""

    source: str
    index: int
    line: int
    #: 0-based position inside a ``kind: List`` document (or a JSON array), when it is one.
    item: Optional[int] = None

    def __str__(self) -> str:
        if self.index == 0:  # the file itself (unreadable), not one of its documents
            return self.source
        inside = f", item {self.item}" if self.item is not None else ""
        return f"{self.source}:{self.line} (document {self.index}{inside})"


@dataclass(frozen=True)
class Decoded:
    obj: TypedObject
    origin: Origin
    #: field path -> line in the source, so later errors (admission) can name lines too.
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class DocumentError:
    """One document that did not decode (or, as a warning, was skipped)."""

    origin: Origin
    error: CalderaError
    #: ``apiVersion kind name`` as far as the document says.
    ref: str = ""
    #: field path -> line, for the paths in ``error`` when it is a ValidationFailed.
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        """Field paths of the error: each broken rule's, ``apiVersion``/``kind`` for an
        unknown kind, ``""`` when the document as a whole is wrong (not YAML, a fragment)."""
        if isinstance(self.error, ValidationFailed):
            return self.error.paths
        if isinstance(self.error, WrongApiVersion):
            return ["apiVersion"]
        if isinstance(self.error, UnknownKind):
            return ["kind"]
        return [""]

    def line_of(self, path: str) -> Optional[int]:
        """The line of ``path``, or of its nearest written parent (a missing field's object)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = _PARENT.sub("", path)
        return None

    def describe(self) -> str:
        """Human text: where, what object, then one line per broken rule."""
        head = f"{self.origin}"
        if self.ref:
            head += f" {self.ref}"
        if isinstance(self.error, ValidationFailed):
            lines = [f"{head if self.ref else f'{head} {self.error.obj_ref}'} is invalid:"]
            for err in self.error.errors:
                at = self.line_of(err.path)
                where = f" (line {at})" if at else ""
                lines.append(f"  {err.path or '<object>'}{where}: {err.message}")
            return "\n".join(lines)
        return f"{head}: {self.error}"


@dataclass
class DecodeResult:
    objects: list[Decoded] = field(default_factory=list)
    errors: list[DocumentError] = field(default_factory=list)
    #: Documents skipped on purpose (not a Caldera kind): worth a message, not a failure.
    warnings: list[DocumentError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def extend(self, other: "DecodeResult") -> None:
        self.objects.extend(other.objects)
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)


# ---------------------------------------------------------------- decoding
def decode_text(text: str, source: str = "<text>") -> DecodeResult:
    """Decode every document of ``text`` (YAML or JSON)."""
    result = DecodeResult()
    if text.startswith("\ufeff"):
        text = text[1:]
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            pass  # not strict JSON: YAML flow style is handled below
        else:
            _decode_json(data, text, source, result)
            return result
    index = 0
    for offset, chunk in split_documents(text):
        try:
            node, data = parse_chunk(chunk, offset)
        except yaml.YAMLError as exc:
            index += 1
            line = problem_line(exc, offset) or offset + 1
            result.errors.append(DocumentError(Origin(source, index, line), DecodeError(yaml_message(exc, offset))))
            continue
        if node is None or data is None:
            continue  # empty document (only comments, or an explicit null)
        index += 1
        origin = Origin(source, index, offset + node.start_mark.line + 1)
        _decode_document(data, origin, line_map(node, offset), result)
    return result


def _decode_json(data: Any, text: str, source: str, result: DecodeResult) -> None:
    try:
        lines = line_map(yaml.compose(text, Loader=yaml.SafeLoader), 0)
    except yaml.YAMLError:
        lines = {}
    if not isinstance(data, list):
        _decode_document(data, Origin(source, 1, first_content_line(text) + 1), lines, result)
        return
    for number, item in enumerate(data):
        prefix = f"[{number}]."
        inner = {p[len(prefix):]: ln for p, ln in lines.items() if p.startswith(prefix)}
        origin = Origin(source, 1, lines.get(f"[{number}]", 1), number)
        _decode_document(item, origin, inner, result)


def _ref(data: dict[str, Any]) -> str:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    parts = [str(data.get("apiVersion") or "<no apiVersion>"), str(data.get("kind") or "<no kind>")]
    name = meta.get("name") if meta else None
    namespace = meta.get("namespace") if meta else None
    if name:
        parts.append(f"{namespace}/{name}" if namespace else str(name))
    return " ".join(parts)


def _decode_document(data: Any, origin: Origin, lines: dict[str, int], result: DecodeResult) -> None:
    if not isinstance(data, dict):
        what = "a list" if isinstance(data, list) else f"a {type(data).__name__} ({data!r:.40})"
        result.errors.append(DocumentError(origin, NotAnObject(f"the document is {what}, not a Kubernetes object")))
        return
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        for number, item in enumerate(data["items"]):
            prefix = f"items[{number}]."
            inner = {p[len(prefix):]: ln for p, ln in lines.items() if p.startswith(prefix)}
            item_origin = Origin(origin.source, origin.index, lines.get(f"items[{number}]", origin.line), number)
            _decode_document(item, item_origin, inner, result)
        return
    if not kind and not api_version:
        foreign = _foreign_without_envelope(data)
        if foreign:
            result.warnings.append(DocumentError(origin, NotACalderaKind("", foreign, known_kinds()), _ref(data)))
        else:
            result.errors.append(DocumentError(origin, NotAnObject(_fragment_message(data), data)))
        return
    ref = _ref(data)
    missing = [FieldError(name, "required field is missing: every object names its apiVersion and kind")
               for name, value in (("apiVersion", api_version), ("kind", kind)) if not value]
    if missing:
        result.errors.append(DocumentError(origin, ValidationFailed(ref, missing), ref, lines))
        return
    try:
        info = lookup(str(api_version), str(kind))
    except NotACalderaKind as exc:
        result.warnings.append(DocumentError(origin, exc, ref))
        return
    except UnknownKind as exc:
        result.errors.append(DocumentError(origin, _with_version_hint(exc, str(api_version), str(kind)), ref))
        return
    try:
        model = info.model
    except (ImportError, AttributeError) as exc:
        result.errors.append(DocumentError(origin, DecodeError(f"kind {info.kind} is known but its model is not available: {exc}"), ref))
        return
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        errors = pydantic_field_errors(exc, data, model)
        obj_ref = _obj_ref(info.kind, data)
        result.errors.append(DocumentError(origin, ValidationFailed(obj_ref, errors), ref, lines))
        return
    result.objects.append(Decoded(obj, origin, lines))


class WrongApiVersion(UnknownKind):
    """A kind Caldera serves, written with an apiVersion it does not serve it under."""

    def __init__(self, api_version: str, kind: str, served: list[str]) -> None:
        super().__init__(api_version, kind, known_kinds())
        self.served = served
        self.args = (f"apiVersion: {kind} is not served as {api_version!r}; "
                     f"use apiVersion {' or '.join(repr(v) for v in served)}",)


def _with_version_hint(exc: UnknownKind, api_version: str, kind: str) -> UnknownKind:
    served = [k.api_version for k in KINDS if k.kind == kind]
    return WrongApiVersion(api_version, kind, served) if served else exc


def _obj_ref(kind: str, data: dict[str, Any]) -> str:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    name = (meta or {}).get("name") or "<unnamed>"
    namespace = (meta or {}).get("namespace")
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def _foreign_without_envelope(data: dict[str, Any]) -> Optional[str]:
    """Formats known to live without apiVersion/kind: Prometheus rule files, and the agent's
    simulated-cluster files (``pools:``, read by ``caldera agent --sim``, docs/agent.md)."""
    groups = data.get("groups")
    if isinstance(groups, list) and groups and all(isinstance(g, dict) and "rules" in g for g in groups):
        return "Prometheus rule groups"
    if isinstance(data.get("pools"), list):
        return "a simulated-cluster file for caldera agent --sim"
    return None


_FRAGMENT_HINTS: dict[str, str] = {
    "data": "the data of a ConfigMap",
    "plugins": "the plugins of a Volcano Job spec (spec.plugins)",
    "affinity": "the affinity of a pod spec (spec.affinity)",
    "tiers": "the body of volcano-scheduler.conf",
    "actions": "the body of volcano-scheduler.conf",
    "tasks": "the tasks of a Volcano Job spec (spec.tasks)",
    "spec": "an object without its apiVersion and kind",
}


FRAGMENT_ADVICE = "Write the whole object with apiVersion, kind and metadata.name to validate it"


def _fragment_message(data: dict[str, Any]) -> str:
    keys = ", ".join(str(k) for k in list(data)[:5])
    hint = next((h for k, h in _FRAGMENT_HINTS.items() if k in data), None)
    body = data.get("data")
    if isinstance(body, dict) and "volcano-scheduler.conf" in body:
        hint = "the data of the volcano-scheduler ConfigMap (volcano-scheduler.conf)"
    looks = f"; it looks like {hint}" if hint else ""
    return (f"the document is a fragment, not a Kubernetes object (no apiVersion/kind; top-level keys: {keys}){looks}. "
            f"{FRAGMENT_ADVICE}")


def decode_path(path: str | Path) -> DecodeResult:
    """Decode a file, a directory (recursively, ``*.yaml|*.yml|*.json`` in name order) or ``-``."""
    if str(path) == STDIN:
        import sys

        return decode_text(sys.stdin.read(), "<stdin>")
    target = Path(path)
    result = DecodeResult()
    if target.is_dir():
        files = sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
        for file in files:
            result.extend(_decode_file(file))
        return result
    return _decode_file(target)


def _decode_file(path: Path) -> DecodeResult:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        result = DecodeResult()
        result.errors.append(DocumentError(Origin(str(path), 0, 0), DecodeError(f"cannot read the file: {getattr(exc, 'strerror', None) or exc}")))
        return result
    return decode_text(text, str(path))


def decode_paths(paths: Iterable[str | Path]) -> DecodeResult:
    result = DecodeResult()
    for path in paths:
        result.extend(decode_path(path))
    return result


def decode_object(data: Any, source: str = "<object>") -> TypedObject:
    """A typed object from an already parsed manifest (a Work's manifest, an API request body).

    Raises the same errors decoding text would: ValidationFailed with Kubernetes paths,
    UnknownKind/NotACalderaKind, NotAnObject.
    """
    result = DecodeResult()
    _decode_document(data, Origin(source, 1, 0), {}, result)
    failures = result.errors or result.warnings
    if failures:
        raise failures[0].error
    if len(result.objects) != 1:
        raise DecodeError(f"{source}: expected one object, found {len(result.objects)}")
    return result.objects[0].obj


def decode_one(text: str, source: str = "<text>") -> TypedObject:
    """Exactly one valid object, or raise the first error (for tests and small callers)."""
    result = decode_text(text, source)
    if result.errors:
        raise result.errors[0].error
    if len(result.objects) != 1:
        raise DecodeError(f"{source}: expected one object, found {len(result.objects)}")
    return result.objects[0].obj


# ---------------------------------------------------------------- admission
def admit_all(decoded: DecodeResult, namespace: str = "default") -> DecodeResult:
    """Run admission (defaults + validation, offline) on every decoded object.

    Namespaced kinds without a namespace get ``namespace`` first, as the API server would,
    since some defaults depend on it (a PropagationPolicy's selectors).
    """
    from policies.admission import admit
    from policies.kinds import lookup as kind_lookup

    out = DecodeResult(errors=list(decoded.errors), warnings=list(decoded.warnings))
    for item in decoded.objects:
        obj = item.obj
        info = kind_lookup(obj.api_version or obj.API_VERSION, obj.kind or obj.KIND)
        if info.namespaced and not obj.metadata.namespace:
            obj = obj.model_copy(deep=True)
            obj.metadata.namespace = namespace
        try:
            out.objects.append(Decoded(admit(obj), item.origin, item.lines))
        except ValidationFailed as exc:
            ref = f"{obj.api_version} {obj.kind} {obj.ref().split(' ', 1)[1]}"
            out.errors.append(DocumentError(item.origin, exc, ref, item.lines))
    return out


# ---------------------------------------------------------------- dumping
Format = Literal["yaml", "json", "name"]


def name_of(obj: TypedObject) -> str:
    """``kind.group/name`` as ``kubectl -o name`` prints it."""
    info = lookup(obj.api_version or obj.API_VERSION, obj.kind or obj.KIND)
    singular = f"{info.singular}.{info.group}" if info.group else info.singular
    return f"{singular}/{obj.name or obj.metadata.generate_name or '<unnamed>'}"


def dump(objs: Sequence[TypedObject], fmt: Format = "yaml") -> str:
    """Objects as YAML documents, JSON (one object, or a ``v1 List``), or ``-o name`` lines."""
    if fmt == "name":
        return "".join(f"{name_of(o)}\n" for o in objs)
    wires = [o.to_wire() for o in objs]
    if fmt == "json":
        body: Any = wires[0] if len(wires) == 1 else {"apiVersion": "v1", "kind": "List", "items": wires}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump_all(wires, sort_keys=False, allow_unicode=True, explicit_start=len(wires) > 1)
