"""YAML reading for the codec: kubectl-style document splitting, a strict loader, messages.

Documents are split on ``---`` lines before parsing (as kubectl's YAML reader does), so a
malformed document does not hide the ones after it. Each chunk is parsed on its own (with
libyaml when PyYAML has it) and every line reported is shifted by the chunk's offset, so it
is a line of the whole file (cost stays linear in the file size). The loader rejects duplicate
keys, as Kubernetes' strict decoding does; a duplicate ``apiVersion`` usually means two
objects were written without a ``---`` between them, and the message says so.
"""

from __future__ import annotations

import re
from typing import Any, Optional

import yaml

_BaseLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


class StrictLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that rejects duplicate keys, as Kubernetes' strict decoding does."""

    #: 0-based line of the chunk in the whole file (for messages that quote other lines).
    line_offset = 0


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    # Check the keys as written, before merge keys (``<<: *base``) are expanded: a key that
    # overrides a merged one is allowed, a key written twice is not.
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            hint = (" (two objects written one after the other? separate them with a '---' line)"
                    if key in ("apiVersion", "kind") else "")
            raise yaml.constructor.ConstructorError(
                None, None,
                f"duplicate key {key!r} (first at line {loader.line_offset + seen[key] + 1}){hint}",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=deep)
    return mapping


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

SEPARATOR = re.compile(r"^---(?:[ \t].*)?$")


def split_documents(text: str) -> list[tuple[int, str]]:
    """Split on ``---`` lines like kubectl's YAML reader; each chunk with its 0-based first line."""
    chunks: list[tuple[int, str]] = []
    start = 0
    current: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True)):
        if SEPARATOR.match(line.rstrip("\r\n")):
            chunks.append((start, "".join(current)))
            # keep content after '--- ' (e.g. '--- !tag' or '--- {a: 1}') on the separator line
            start, current = number, [" " * 3 + line[3:]]
        else:
            current.append(line)
    chunks.append((start, "".join(current)))
    return chunks


def parse_chunk(chunk: str, offset: int) -> tuple[Optional[yaml.Node], Any]:
    """The node tree (marks relative to the chunk) and the data of one document."""
    loader = StrictLoader(chunk)
    loader.line_offset = offset
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        return node, data
    finally:
        loader.dispose()


def problem_line(exc: yaml.YAMLError, offset: int) -> Optional[int]:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return offset + mark.line + 1 if mark is not None else None


def yaml_message(exc: yaml.YAMLError, offset: int) -> str:
    """PyYAML's error in one line, with the line and column in the whole file."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return f"not valid YAML: {exc}"
    where = ""
    if exc.problem_mark is not None:
        where = f" at line {offset + exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}"
    context = ""
    if exc.context:
        started = f" started at line {offset + exc.context_mark.line + 1}" if exc.context_mark is not None else ""
        context = f" ({exc.context}{started})"
    return f"not valid YAML{where}: {exc.problem or exc}{context}"


def first_content_line(text: str) -> int:
    for number, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not SEPARATOR.match(stripped):
            return number
    return 0
