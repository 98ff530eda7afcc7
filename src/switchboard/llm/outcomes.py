"""Turns a finished /v1 call into the CallOutcome that metering records."""

from __future__ import annotations

import time
from typing import Any

from switchboard.kit.clock import utcnow
from switchboard.llm.context import PreparedCall
from switchboard.metering.outcome import CallOutcome, CallStatus
from switchboard.upstream.types import Usage


def build_outcome(
    call: PreparedCall,
    *,
    status: CallStatus,
    usage: Usage | None,
    error_code: str | None = None,
    ttft_ms: int | None = None,
) -> CallOutcome:
    usage = usage or Usage()
    return CallOutcome(
        request_id=call.request_id,
        occurred_at=utcnow(),
        economy_id=call.economy_id,
        user_id=call.principal.user_id,
        room_id=call.room_id,
        agent_id=call.agent_id,
        session_id=call.session_id,
        credential_id=call.credential.id,
        credential_scope=call.credential.scope,
        provider=call.model.provider,
        model=call.model.model,
        selector=call.selector,
        endpoint=call.endpoint,
        stream=call.stream,
        status=status,
        error_code=error_code,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        latency_ms=int((time.perf_counter() - call.started) * 1000),
        ttft_ms=ttft_ms,
        idempotency_key=call.idempotency_key,
    )


def error_code_of(error: BaseException) -> str:
    code: Any = getattr(error, "openai_code", None) or getattr(error, "code", None)
    return str(code or type(error).__name__)
