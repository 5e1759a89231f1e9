"""``caldera serve`` as a real subprocess (for kubectl, CLI and crash tests)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

LISTENING = re.compile(r"listening on (https?://\S+)")


class ServeProcess:
    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.home = data_dir

    def start(self, timeout: float = 30.0) -> "ServeProcess":
        cmd = [sys.executable, "-m", "federation", "serve", "--data-dir", str(self.data_dir),
               "--listen", "127.0.0.1:0", "--no-controllers", *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"caldera serve exited: {''.join(seen)}")
            seen.append(line)
            match = LISTENING.search(line)
            if match:
                self.url = match.group(1)
                # the admin kubeconfig is written before the listening line is printed
                return self
        raise RuntimeError(f"caldera serve did not start in {timeout}s: {''.join(seen)}")

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    def kubeconfig_dict(self) -> dict[str, object]:
        data: dict[str, object] = yaml.safe_load(self.kubeconfig.read_text())
        return data

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> int:
        """SIGTERM and wait: the exit code of a graceful shutdown."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(15)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code
