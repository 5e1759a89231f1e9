"""Shared fixtures. Area-specific fixtures live in each test folder's conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA
