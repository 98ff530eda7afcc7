"""What a model call reports to metering (`CallOutcome`) and the sink that records it durably."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

# "abandoned": the call's replica died before it settled; written by recovery (SPEC §13).
CallStatus = Literal["ok", "error", "cancelled", "abandoned"]
CredentialScope = Literal["user", "room", "deployment"]


@dataclass(frozen=True)
class CallOutcome:
    """SPEC §8's usage record minus `id`, `cost` and `priced`, which metering computes.

    `provider`, `model` and `economy_id` are also what pricing needs. Token counts are the
    provider's reported usage (for a cancelled stream: what was known so far).
    """

    request_id: str
    occurred_at: datetime
    economy_id: uuid.UUID
    user_id: uuid.UUID
    provider: str
    model: str
    selector: str
    endpoint: str
    credential_scope: CredentialScope
    status: CallStatus = "ok"
    stream: bool = False
    room_id: uuid.UUID | None = None
    agent_id: str | None = None
    session_id: str | None = None
    credential_id: uuid.UUID | None = None
    error_code: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    latency_ms: int = 0
    ttft_ms: int | None = None
    idempotency_key: str | None = None
    # The tokens are the gateway's estimate: content reached the client, the provider's count did not
    # reach the gateway. Said here when `error_code` must name the failure (else it says usage_estimated).
    usage_estimated: bool = False
    api_key_id: uuid.UUID | None = None
    attempt: int = 1  # which of the call's attempts this record is (SPEC §14)
    # SPEC §20: cache writes (of them, one-hour writes) and the tier the answer was served at.
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    service_tier: str | None = None
    # SPEC §23: the answer came from the response cache; the record keeps the tokens, its cost is 0.
    cache_hit: bool = False


class CallSink(Protocol):
    """`app.state.call_sink`: `record` returns only once the outcome's record is committed (with its
    cost, when known; settlement/ commits what a call's ending settles in the same transaction)."""

    async def record(self, outcome: CallOutcome) -> int | None: ...


def new_record_id() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): time-ordered, so new records append to the primary-key index."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80
    value |= int.from_bytes(os.urandom(10), "big") & ((1 << 80) - 1)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return uuid.UUID(int=value)
