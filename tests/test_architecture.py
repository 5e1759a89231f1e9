"""The house rules, enforced: planes never import each other, pure cores do no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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
