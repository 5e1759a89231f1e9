"""Audit logs, tokens and kubeconfigs are created 0600 at open (issue 42): never readable by others,
not even for the moment between a write and a chmod."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from federation import private_files
from federation.apiserver.audit import RotatingWriter


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common 022 umask, with which a plain open() makes 0644 files."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_audit_log_and_its_rotations_are_0600(tmp_path: Path, open_umask: None) -> None:
    stamps = iter(datetime(2026, 12, 5, 20, 0, s, tzinfo=UTC) for s in range(10))
    writer = RotatingWriter(tmp_path / "audit.log", max_bytes=40, clock=lambda: next(stamps))
    assert mode(tmp_path / "audit.log") == 0o600
    for _ in range(3):
        writer.write(b"x" * 30 + b"\n")  # each write past 40 bytes rotates
    writer.close()
    files = list(tmp_path.iterdir())
    assert len(files) >= 3 and {mode(f) for f in files} == {0o600}, files


def test_private_text_files_are_0600_even_when_they_existed(tmp_path: Path, open_umask: None) -> None:
    fresh = tmp_path / "viewer.token"
    private_files.write_text(fresh, "secret\n")
    assert mode(fresh) == 0o600 and fresh.read_text() == "secret\n"
    loose = tmp_path / "agent.kubeconfig"
    loose.write_text("old")
    assert mode(loose) == 0o644
    private_files.write_text(loose, "new")
    assert mode(loose) == 0o600 and loose.read_text() == "new"


def test_caldera_token_writes_a_0600_kubeconfig(tmp_path: Path, open_umask: None) -> None:
    from federation.cli import main

    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "viewer.kubeconfig"
    assert main(["token", "--data-dir", str(data), "--role", "viewer", "--output", str(out),
                 "--server", "https://127.0.0.1:1"]) == 0
    assert mode(out) == 0o600
    assert mode(data / "tokens.csv") == 0o600
