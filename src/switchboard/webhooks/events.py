"""The events a webhook may subscribe to (SPEC §22) and the body every delivery of one carries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

BUDGET_THRESHOLD = "budget.threshold"
LIMIT_REFUSED = "limit.refused"
CREDENTIAL_REJECTED = "credential.rejected"
AUDIT_EVENT = "audit.event"
# Sent by POST /webhooks/{id}/test to that webhook only; not subscribable.
TEST = "webhook.test"

EVENT_TYPES: tuple[str, ...] = (BUDGET_THRESHOLD, LIMIT_REFUSED, CREDENTIAL_REJECTED, AUDIT_EVENT)
# Percentages of a cost limit's amount whose crossing is an event, once each per window.
THRESHOLDS: tuple[int, ...] = (50, 80, 100)


def body_of(event_type: str, at: datetime, data: dict[str, Any]) -> str:
    """`{type, timestamp, data}` as the JSON text every attempt sends and signs, byte for byte."""
    return orjson.dumps({"type": event_type, "timestamp": at.isoformat(), "data": data}).decode()
