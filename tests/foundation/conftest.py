"""Fixtures: gateways carrying the test-only probe router."""

from tests.support.probe import make_probe_gateway, probe_gateway

__all__ = ["make_probe_gateway", "probe_gateway"]
