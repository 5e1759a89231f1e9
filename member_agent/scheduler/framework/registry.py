"""Registries of plugins and actions: name → module exporting NAME, ARGUMENTS and ``new``.

Each plugin or action lives in its own module::

    NAME = "binpack"
    ARGUMENTS = (Argument("binpack.weight", int, 1), ...)
    PREFIXED = {"binpack.resources.": int}          # optional families of keys
    def new(args: dict) -> Plugin: ...

and the package ``__init__`` lists them explicitly (no import-time side effects), by name and
module path: ``REGISTRY = Registry("plugin", {"priority": "...plugins.priority", ...})``. A module
is imported the first time its name is used (a conf naming 5 of the 17 plugins loads those 5; the
agent's scheduler cache importing ``plugins.device_ledger`` loads none). Module objects may be
registered too (tests). :meth:`Registry.build` checks the arguments and builds an instance; errors
name the plugin and the argument.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Iterable, Mapping

from member_agent.scheduler.framework.arguments import parse_arguments
from policies.errors import InvalidConfiguration

#: Argument sets :meth:`Registry.parse` remembers (a conf names a few dozen plugins at most).
_PARSED_KEPT = 256


class Registry:
    def __init__(self, kind: str, modules: Iterable[ModuleType] | Mapping[str, str] = ()) -> None:
        self.kind = kind
        self._modules: dict[str, ModuleType] = {}
        self._lazy: dict[str, str] = {}  # name -> dotted module path, not imported yet
        #: (name, id of the raw arguments) -> (those arguments, a copy of them, values, warnings):
        #: a session builds every plugin of its conf, and a replay opens a session per tick on one
        #: conf object, so checking the same arguments again was a per-session cost
        self._parsed: dict[tuple[str, int], tuple[Any, Any, dict[str, Any], list[str]]] = {}
        if isinstance(modules, Mapping):
            self._lazy.update(modules)
        else:
            for module in modules:
                self.register(module)

    def register(self, module: ModuleType) -> None:
        name = getattr(module, "NAME", None)
        if not isinstance(name, str) or not callable(getattr(module, "new", None)):
            raise TypeError(f"{module.__name__} must export NAME and new(args)")
        if name in self._modules or name in self._lazy:
            raise ValueError(f"duplicate {self.kind} {name!r}")
        self._modules[name] = module

    def names(self) -> tuple[str, ...]:
        return (*self._modules, *(n for n in self._lazy if n not in self._modules))

    def __contains__(self, name: object) -> bool:
        return name in self._modules or name in self._lazy

    def module(self, name: str) -> ModuleType:
        module = self._modules.get(name)
        if module is not None:
            return module
        path = self._lazy.get(name)
        if path is None:
            raise InvalidConfiguration(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        module = importlib.import_module(path)
        if getattr(module, "NAME", None) != name or not callable(getattr(module, "new", None)):
            raise TypeError(f"{path} must export NAME = {name!r} and new(args)")
        self._modules[name] = module
        return module

    def parse(self, name: str, raw: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
        """Typed arguments and warnings, each call its own dict and list. Remembered for the same
        arguments object while it holds the same items (errors are never remembered)."""
        key = (name, id(raw))
        kept = self._parsed.get(key)
        if kept is not None and kept[0] is raw and kept[1] == raw:
            return dict(kept[2]), list(kept[3])
        module = self.module(name)
        values, warnings = parse_arguments(
            f"{self.kind} {name}", getattr(module, "ARGUMENTS", ()), raw, getattr(module, "PREFIXED", None)
        )
        if len(self._parsed) >= _PARSED_KEPT:
            self._parsed.clear()
        # the object itself is held, so its id is not reused while the entry lives
        self._parsed[key] = (raw, None if raw is None else dict(raw), dict(values), list(warnings))
        return values, warnings

    def build(self, name: str, raw: Mapping[str, Any] | None) -> tuple[Any, list[str]]:
        args, warnings = self.parse(name, raw)
        return self.module(name).new(args), warnings
