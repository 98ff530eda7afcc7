"""Egress fixtures (SPEC §21): tests/credentials' strict gateway, tests/upstream's UpstreamClient."""

from __future__ import annotations

from tests.credentials.conftest import strict_gateway
from tests.upstream.conftest import upstream

__all__ = ["strict_gateway", "upstream"]
