"""Egress fixtures (SPEC §21): tests/credentials' strict gateway, and an UpstreamClient."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import Timeouts
from tests.credentials.conftest import strict_gateway

__all__ = ["strict_gateway", "upstream"]

# No test here waits for a timeout, so they are far off: litellm's first call imports inside the
# first-byte window, which a busy machine stretches.
TIMEOUTS = Timeouts(connect=10.0, first_byte=60.0, idle=30.0)


@pytest.fixture
async def upstream() -> AsyncIterator[UpstreamClient]:
    client = UpstreamClient(TIMEOUTS)
    yield client
    await client.aclose()
