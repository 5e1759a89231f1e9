"""One ``caldera serve`` (TLS, no controllers) for every client module here, for the real clients to drive.

The server is a subprocess, as a team would run it; its output is drained by a thread so it never
blocks on a full pipe. Starting it dominates these tests, so the modules share it (package scope) and
each names its objects with its own prefix (``off-``, ``kr-``, ``lk-``, ``kopf-``, ``validate-``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apiserver.serve_process import ServeProcess


@pytest.fixture(scope="package")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    process = ServeProcess(tmp_path_factory.mktemp("serve") / "data").start()
    assert process.proc is not None and process.proc.stdout is not None
    stream = process.proc.stdout
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(stream), daemon=True).start()
    yield process
    process.stop()


@pytest.fixture(scope="package")
def kubeconfig(serve: ServeProcess) -> Path:
    return serve.kubeconfig
