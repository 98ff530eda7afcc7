"""Credential fixtures: a gateway that enforces the base_url address rules."""

from __future__ import annotations

import pytest

from tests.conftest import GatewayFactory
from tests.support.gateway import Gateway


@pytest.fixture(scope="session")
def strict_gateway(make_session_gateway: GatewayFactory) -> Gateway:
    """SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS=false, as in production."""
    return make_session_gateway(env={"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false"})
