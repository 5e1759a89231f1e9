"""Registries of plugins and actions: name → module exporting NAME, ARGUMENTS and ``new``.

Each plugin or action lives in its own module::

    NAME = "binpack"
    ARGUMENTS = (Argument("binpack.weight", int, 1), ...)
    PREFIXED = {"binpack.resources.": int}          # optional families of keys
    def new(args: dict) -> Plugin: ...

and the package ``__init__`` lists them explicitly (no import-time side effects):
``REGISTRY = Registry("plugin", [priority, gang, ...])``. :meth:`Registry.build` checks
the arguments and builds an instance; errors name the plugin and the argument.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Iterable, Mapping

from member_agent.scheduler.framework.arguments import parse_arguments
from policies.errors import InvalidConfiguration


class Registry:
    def __init__(self, kind: str, modules: Iterable[ModuleType] = ()) -> None:
        self.kind = kind
        self._modules: dict[str, ModuleType] = {}
        for module in modules:
            self.register(module)

    def register(self, module: ModuleType) -> None:
        name = getattr(module, "NAME", None)
        if not isinstance(name, str) or not callable(getattr(module, "new", None)):
            raise TypeError(f"{module.__name__} must export NAME and new(args)")
        if name in self._modules:
            raise ValueError(f"duplicate {self.kind} {name!r}")
        self._modules[name] = module

    def names(self) -> tuple[str, ...]:
        return tuple(self._modules)

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def module(self, name: str) -> ModuleType:
        try:
            return self._modules[name]
        except KeyError:
            raise InvalidConfiguration(
                f"unknown {self.kind} {name!r}; known: {', '.join(self._modules)}"
            ) from None

    def parse(self, name: str, raw: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
        module = self.module(name)
        return parse_arguments(
            f"{self.kind} {name}", getattr(module, "ARGUMENTS", ()), raw, getattr(module, "PREFIXED", None)
        )

    def build(self, name: str, raw: Mapping[str, Any] | None) -> tuple[Any, list[str]]:
        args, warnings = self.parse(name, raw)
        return self.module(name).new(args), warnings
