"""``caldera agent --listen`` on a port another process holds: one line naming the flag, exit 2, no
traceback (issue 42; it used to die with an OSError traceback)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.slow
def test_listen_port_in_use_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "agent.kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "member_agent", "agent", "--cluster", "cluster-a",
                               "--kubeconfig", str(kubeconfig), "--sim", str(REPO / "examples/clusters/cluster-a.yaml"),
                               "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: --listen 127.0.0.1:{port}: cannot listen there "
                                        "(Address already in use)"], done.stderr
