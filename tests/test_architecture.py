"""The house rules, enforced: planes never import each other, pure cores do no I/O, and the
project's module graph has no circle. The layer contracts themselves live in pyproject.toml
([tool.importlinter], run by `lint-imports` in .ci/run); the last test proves a bad import breaks
them, naming it."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Set
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the project's packages (``simulator`` too, once it exists: a composition root that imports both planes)
PACKAGES = [p for p in ("policies", "federation", "member_agent", "simulator") if (ROOT / p).is_dir()]

#: Modules no pure core may import (directly or as a submodule).
IO_MODULES = {"aiohttp", "asyncio", "kubernetes_asyncio", "tenacity", "socket", "subprocess",
              "sqlite3", "requests", "urllib.request", "http.client", "threading"}
PURE_CORES = ["policies", "federation/placement", "member_agent/scheduler"]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _matches(name: str, forbidden: set[str]) -> bool:
    return any(name == f or name.startswith(f + ".") for f in forbidden)


@pytest.mark.parametrize("core", PURE_CORES)
def test_pure_cores_do_no_io(core: str) -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in python_files(core)
        for name in imported_modules(path)
        if _matches(name, IO_MODULES)
    }
    assert not offenders, sorted(offenders)


@pytest.mark.parametrize(("package", "other"), [("federation", "member_agent"), ("member_agent", "federation")])
def test_planes_never_import_each_other(package: str, other: str) -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in python_files(package)
        for name in imported_modules(path)
        if _matches(name, {other})
    }
    assert not offenders, sorted(offenders)


def test_policies_import_nothing_from_the_planes() -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in python_files("policies")
        for name in imported_modules(path)
        if _matches(name, {"federation", "member_agent"})
    }
    assert not offenders, sorted(offenders)


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The AST check itself must catch an import, or the tests above prove nothing."""
    bad = tmp_path / "bad.py"
    bad.write_text("import asyncio\nfrom aiohttp import web\n")
    assert _matches("asyncio", IO_MODULES)
    assert {"asyncio", "aiohttp"} <= imported_modules(bad)


def test_nothing_imports_the_simulator() -> None:
    """``simulator`` is a composition root (issue 12): it imports the planes, never the reverse."""
    offenders = {
        f"{path.relative_to(ROOT)} imports {name}"
        for package in ("policies", "federation", "member_agent")
        for path in python_files(package)
        for name in imported_modules(path)
        if _matches(name, {"simulator"})
    }
    assert not offenders, sorted(offenders)


# -- the module graph is acyclic -------------------------------------------------------------


def find_cycles(edges: Mapping[str, Set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module (or a self-import),
    as a path ``[a, b, ..., a]``; iterative Tarjan, so deep graphs need no recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    components.append(sorted(component))
    return [_circle_through(component, edges) for component in components]


def _circle_through(component: list[str], edges: Mapping[str, Set[str]]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges.get(node, ())):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child in members and child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [*component, component[0]]


def module_graph() -> tuple[grimp.ImportGraph, dict[str, set[str]]]:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)  # TYPE_CHECKING imports count too
    return graph, {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_the_module_graph_has_no_circle() -> None:
    graph, edges = module_graph()
    described = []
    for circle in find_cycles(edges):
        hops = []
        for importer, imported in zip(circle, circle[1:], strict=False):
            lines = sorted(d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported))
            hops.append(f"{importer} -> {imported} (line {', '.join(map(str, lines))})")
        described.append(" | ".join(hops))
    assert not described, "import circles:\n" + "\n".join(described)


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"a"}}, [["a", "b", "a"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]]),
    ({"x": {"x"}}, [["x", "x"]]),
    ({"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["c", "d", "c"], ["a", "b", "a"]]),
])
def test_the_cycle_finder_names_each_circle(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert sorted(find_cycles(edges)) == sorted(expected)


# -- the contracts in pyproject.toml catch a bad import ------------------------------------------

#: (file, import added to it, the contract that must break, what the report must name)
BAD_IMPORTS = [
    ("federation/apiserver/keys.py", "import federation.controllers.runner",
     "the API server and the controller manager never import each other",
     "federation.apiserver.keys -> federation.controllers.runner"),
    ("policies/errors.py", "import member_agent.gang",
     "policies, the ground floor, imports neither plane", "policies.errors -> member_agent.gang"),
    ("member_agent/scheduler/framework/dims.py", "import asyncio",
     "the pure cores import no I/O module", "member_agent.scheduler.framework.dims -> asyncio"),
    ("federation/controllers/common.py", "import federation.cli.serve",
     "CLI modules are imported by nothing below them", "federation.controllers.common -> federation.cli.serve"),
    ("member_agent/works.py", "import simulator",
     "nothing imports the simulator", "member_agent.works -> simulator"),
]


@pytest.mark.skipif(shutil.which("lint-imports") is None and importlib.util.find_spec("importlinter") is None,
                    reason="import-linter is not installed (pip install -e '.[test]')")
def test_a_bad_import_breaks_lint_imports_naming_it(tmp_path: Path) -> None:
    for package in ("policies", "federation", "member_agent"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, line, _, _ in BAD_IMPORTS:
        target = tmp_path / path
        target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    report = done.stdout + done.stderr
    assert done.returncode != 0, report
    for _, _, contract, named in BAD_IMPORTS:
        assert f"{contract}" in report and named in report, (contract, named, report)
    assert report.count("BROKEN") >= len(BAD_IMPORTS), report  # the layers and sibling rules break too


def test_lint_imports_keeps_every_contract_on_the_tree() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
