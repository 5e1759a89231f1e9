"""One ``caldera serve`` subprocess (plain HTTP, no controllers) for the whole fuzzing suite."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.apiserver.serve_process import ServeProcess
from tests.fuzz.engine import Client


@pytest.fixture(scope="package")  # stopped before e2e, whose orphan check would see it
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    data_dir: Path = tmp_path_factory.mktemp("fuzz")
    serve = ServeProcess(data_dir, "--plain-http").start()
    log = data_dir / "serve.log"
    # keep reading the server's output (its tracebacks are the findings' explanation; a full pipe would
    # block the server and look like a hang)
    assert serve.proc is not None and serve.proc.stdout is not None
    drain = threading.Thread(target=_copy, args=(serve.proc.stdout, log), daemon=True)
    drain.start()
    try:
        config = serve.kubeconfig_dict()
        token = config["users"][0]["user"]["token"]  # type: ignore[index]
        client = Client(serve.url, str(token))
        yield client
        client.session.close()
    finally:
        assert serve.stop() == 0, "caldera serve did not stop cleanly after fuzzing"


def _copy(stream: IO[str], path: Path) -> None:
    with path.open("w") as out:
        try:
            for line in stream:
                out.write(line)
                out.flush()
        except (ValueError, OSError):  # the stream was closed as the server stopped
            return
