"""Idempotency-Key on /v1 (SPEC §4): a retry replays the stored answer; a stream replays as a stream."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import Response

from switchboard.auth.principal import Principal
from switchboard.idempotency.service import Claim, New, StoredResponse, check_key, fingerprint
from switchboard.llm.services import Pipeline

# Headers a replay repeats; the request id is the new request's own.
_KEPT = (
    "content-type",
    "x-switchboard-model",
    "x-switchboard-credential",
    "x-switchboard-attempts",
    "retry-after",
)


async def claim_or_replay(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, raw_body: bytes
) -> Claim | Response | None:
    """None without the header; a Claim for a first execution; the stored Response for a retry."""
    value = headers.get("idempotency-key")
    if value is None:
        return None
    key = check_key(value)
    result = await pipeline.idempotency.begin_or_raise(
        f"user:{principal.user_id}", key, fingerprint("POST", path, raw_body)
    )
    if isinstance(result, New):
        return result.claim
    stored = result.stored
    response = Response(content=stored.body, status_code=stored.status)
    for name, header_value in stored.headers:
        response.headers[name] = header_value
    response.headers["idempotent-replayed"] = "true"  # as every other replayed POST (README)
    return response


def stored_from(status: int, headers: dict[str, str], body: bytes) -> StoredResponse:
    kept = tuple((name, value) for name, value in headers.items() if name.lower() in _KEPT)
    return StoredResponse(status=status, headers=kept, body=body)
