"""Fixtures of the agent's tests: a started :class:`agent_fakes.Harness` (an agent over fake
federation and member clusters). A module that needs a differently set-up harness (fencing,
generation tokens) defines its own ``harness``, which takes precedence over this one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from agent_fakes import Harness


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    await h.start()
    yield h
    await h.stop()
