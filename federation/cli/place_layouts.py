"""``caldera place`` on cluster layout files: the agent's ``--sim`` files become the Clusters it reports.

A layout file (``examples/clusters/*.yaml``, :mod:`policies.cluster_layout`) is recognised by its
form: a document without ``kind`` that has ``pools`` or ``nodes``, or only ``v1 Node`` manifests
(then the file's stem names the cluster, as ``--cluster`` would). Each becomes the Cluster object
``caldera agent --sim FILE`` registers and reports before any pod runs
(:func:`policies.cluster_report.idle_cluster`): the same code derives both, so the node shapes the
dry run places on are exactly the agent's. Every other file goes to the manifest decoder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from policies.codec import MANIFEST_SUFFIXES, STDIN
from policies.errors import InvalidConfiguration

Obj = dict[str, Any]


class LayoutError(Exception):
    """A layout file that cannot become a Cluster: the message names the file and the field."""


def _is_layout(documents: list[Any]) -> bool:
    mappings = [d for d in documents if isinstance(d, dict)]
    if not mappings or len(mappings) != len(documents):
        return False
    if any("kind" not in d and ("pools" in d or "nodes" in d) for d in mappings):
        return True
    return all(d.get("kind") == "Node" or (d.get("kind") == "List" and all(
        isinstance(i, dict) and i.get("kind") == "Node" for i in d.get("items") or [])) for d in mappings)


def _layout_cluster(path: Path, text: str) -> Obj:
    from policies.cluster_layout import parse_cluster_text
    from policies.cluster_report import idle_cluster

    try:
        layout = parse_cluster_text(text, source=str(path))
        if not layout.name:
            layout.name = path.stem
        return idle_cluster(layout, source=str(path))
    except InvalidConfiguration as exc:
        raise LayoutError(f"cluster layout {exc}") from None


def _files(path: str) -> list[Path]:
    target = Path(path)
    if target.is_dir():
        return sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [target]


def split_layouts(paths: list[str]) -> tuple[list[str], list[Obj]]:
    """The ``-f`` arguments split into manifest paths (for the decoder) and the Clusters derived from
    the layout files among them (directories are walked as the decoder walks them)."""
    manifests: list[str] = []
    clusters: list[Obj] = []
    for path in paths:
        if path == STDIN:
            manifests.append(path)
            continue
        for file in _files(path):
            try:
                text = file.read_text(encoding="utf-8")
                documents = [d for d in yaml.safe_load_all(text) if d is not None]
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                manifests.append(str(file))  # the decoder reports it, with the line
                continue
            if _is_layout(documents):
                clusters.append(_layout_cluster(file, text))
            else:
                manifests.append(str(file))
    return manifests, clusters
