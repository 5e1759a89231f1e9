"""``caldera demo`` stopped by SIGTERM mid-run leaves no process, and the helpers the kept-demo tests share.

The passing run (``--keep``, its summary, Ctrl-C → exit 0) is checked on the one kept demo of
``e2e/test_member_pods.py``, so CI starts that demo once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from federation.demo.processes import leftover_processes

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
JOBS = ["gpu-dist-training", "pytorch-dist-training", "pytorch-ddp", "resv-example", "shared-gpu-inference",
        "ml-pipeline"]


def caldera_processes_under(path: Path) -> list[str]:
    """Live processes whose command line mentions ``path`` (the demo's data dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(path) in cmdline and state not in ("Z", "X"):
            found.append(cmdline)
    return found


def demo(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "federation", "demo", "--data-dir", str(tmp_path / "demo"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "220"})


def read_until(proc: subprocess.Popen[str], marker: str, timeout: float) -> str:
    """The demo's output up to the first line containing ``marker`` (fails after ``timeout``)."""
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            return "".join(seen)
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"{marker!r} not seen:\n{''.join(seen)}")


def test_sigterm_stops_everything(tmp_path: Path) -> None:
    proc = demo(tmp_path, "--timeout", "150")
    read_until(proc, "applied ", 60)  # the system is up and the jobs are in
    children = [c for c in caldera_processes_under(tmp_path / "demo") if " demo " not in c]
    assert len(children) == 3, children  # the federation and two agents
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest
    assert "interrupted: stopping" in rest
    assert not caldera_processes_under(tmp_path / "demo")
    assert not leftover_processes({proc.pid})
