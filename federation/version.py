"""Caldera's version string: a leaf module, so the CLI and the API server's ``/version`` share it
without importing each other."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def caldera_version() -> str:
    try:
        return version("caldera")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0+local"
