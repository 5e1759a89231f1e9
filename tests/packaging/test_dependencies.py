"""Runtime dependencies are exactly what runs: every third-party module the federation, the agent and
``policies`` import is a ``[project].dependencies`` entry, every entry is imported by them, and what
only the tests or ``caldera simulate`` use stays in an extra (pyproject.toml)."""

from __future__ import annotations

import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OWN = {"policies", "federation", "member_agent", "simulator"}
RUNTIME_PACKAGES = ("policies", "federation", "member_agent")


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


FROM_IMPORT = re.compile(r"^\s*from\s+([A-Za-z_][\w.]*)\s+import\b", re.MULTILINE)
IMPORT = re.compile(r"^\s*import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)\s*(?:#.*)?$",
                    re.MULTILINE)


@functools.cache
def _imports(package: str) -> dict[str, str]:
    """Top-level third-party modules imported anywhere under ``package`` (lazy imports too) -> a file.
    Import statements are read line by line (an AST walk of the tree takes ~20 s on a busy machine)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        names = FROM_IMPORT.findall(text)
        for group in IMPORT.findall(text):
            names += [part.split()[0] for part in group.split(",")]
        for name in names:
            top = name.split(".")[0]
            if top not in OWN and top not in sys.stdlib_module_names:
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@functools.cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()


def _distributions(module: str) -> set[str]:
    return {d.lower().replace("_", "-") for d in _installed().get(module, [])}


def test_runtime_imports_are_exactly_the_declared_dependencies() -> None:
    declared = {_name(r) for r in PROJECT["dependencies"]}
    used: set[str] = set()
    for package in RUNTIME_PACKAGES:
        for module, where in _imports(package).items():
            dists = _distributions(module) & declared
            assert dists, f"{where} imports {module!r}, which no [project].dependencies entry provides"
            used |= dists
    assert declared - used == set(), "declared but never imported by policies, federation or member_agent"


def test_test_and_simulate_packages_stay_out_of_the_runtime() -> None:
    runtime = {_name(r) for r in PROJECT["dependencies"]}
    for extra in ("test", "simulate"):
        leaked = {_name(r) for r in PROJECT["optional-dependencies"][extra]} & runtime
        assert leaked == set(), f"{sorted(leaked)} are both runtime dependencies and in the {extra} extra"
    assert "matplotlib" in _imports("simulator")  # the simulate extra is what the simulator draws with
    assert any(_name(r) == "matplotlib" for r in PROJECT["optional-dependencies"]["simulate"])
