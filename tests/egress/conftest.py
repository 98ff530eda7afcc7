"""Egress fixtures (SPEC §21): the strict gateway of tests/credentials and the UpstreamClient of tests/upstream."""

from __future__ import annotations

from tests.credentials.conftest import strict_gateway
from tests.upstream.conftest import upstream

__all__ = ["strict_gateway", "upstream"]
