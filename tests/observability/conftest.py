"""The probe gateways (a route that crashes) for the access-log tests."""

from __future__ import annotations

from tests.support.probe import make_probe_gateway

__all__ = ["make_probe_gateway"]
