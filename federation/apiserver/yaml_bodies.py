"""YAML request bodies, refused before anything is expanded when aliases would blow them up.

A YAML alias (``*a``) names a node defined once (``&a``); the constructed document shares it, but
every consumer afterwards (admission, JSON encoding, storage) walks each reference in full. Nine levels of ten aliases is 10^9 nodes from under a kilobyte (the "billion laughs";
kube-apiserver's CVE-2019-11253). The document is therefore *composed* first (a graph in which an
alias is one more edge to an existing node, so composing costs the size of the text), its expanded
size is counted on that graph with one memoised pass, and only a document within the limits is
constructed. The limits follow go-yaml's (which kube-apiserver uses since the CVE): more than
:data:`MIN_ALIASES` alias expansions are refused once they are a larger share of all nodes than
:func:`allowed_alias_ratio` allows, and a recursive alias (a node containing itself) is refused.
"""

from __future__ import annotations

from typing import Any

import yaml

from federation.apiserver import status as st

_Loader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
#: go-yaml's thresholds: small documents may alias freely
MIN_ALIASES = 100
MIN_NODES = 1000
RATIO_RANGE_LOW, RATIO_RANGE_HIGH = 400_000, 4_000_000
#: a document expanding past this many nodes is refused whatever its alias ratio
MAX_EXPANDED_NODES = 4_000_000

EXCESSIVE = "yaml: document contains excessive aliasing"


def allowed_alias_ratio(nodes: int) -> float:
    """0.99 up to 400,000 decoded nodes, falling linearly to 0.10 at 4,000,000 (go-yaml's rule)."""
    if nodes <= RATIO_RANGE_LOW:
        return 0.99
    if nodes >= RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - RATIO_RANGE_LOW) / (RATIO_RANGE_HIGH - RATIO_RANGE_LOW)


def expanded_size(root: yaml.Node) -> tuple[int, int]:
    """(nodes after expanding every alias, of which reached through a second reference).
    Raises ValueError for a node that contains itself."""
    sizes: dict[int, int] = {}
    # iterative post-order walk: deep documents must not hit Python's recursion limit
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        if key in active:
            raise ValueError("a node contains itself")
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise ValueError("a node contains itself")
            if id(child) not in sizes:
                stack.append((child, False))
    total = sizes[id(root)]
    return total, total - len(sizes)  # each distinct node is decoded once without an alias


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load(raw: bytes) -> Any:
    """One YAML document, or 400 BadRequest (not YAML, more than one document, excessive aliasing)."""
    loader = _Loader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            total, aliased = expanded_size(node)
        except ValueError:
            raise st.bad_request(f"the request body is not valid YAML: {EXCESSIVE} (an alias refers to "
                                 "a node that contains it)") from None
        if total > MAX_EXPANDED_NODES or (aliased > MIN_ALIASES and total > MIN_NODES
                                          and aliased / total > allowed_alias_ratio(total)):
            raise st.bad_request(f"the request body is not valid YAML: {EXCESSIVE} ({total} nodes once "
                                 f"expanded, {aliased} of them through aliases)")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise st.bad_request(f"the request body is not valid YAML: {exc}") from None
    finally:
        loader.dispose()
