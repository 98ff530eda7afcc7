"""POST /v1/messages/count_tokens (SPEC §16): relayed to an `anthropic` credential, counted here otherwise.

The call resolves as a Messages call would (selector, room, credential in reach, Viewer refused), but
no completion runs: nothing is reserved against limits, no usage record is written, and an
Idempotency-Key is not needed (the answer is the same every time). The first route decides: an
`anthropic` credential is asked (free at Anthropic), any other kind is counted by the gateway
(surfaces/messages_count.py). There is no fallback: a count is cheap to ask again.
"""

from __future__ import annotations

import orjson
from starlette.datastructures import Headers
from starlette.responses import Response

from switchboard.auth.principal import Principal
from switchboard.db.on_demand import SessionOnDemand
from switchboard.llm.call_attempt import first_attempt
from switchboard.llm.context import prepare_call
from switchboard.llm.services import Pipeline
from switchboard.surfaces import messages_request
from switchboard.surfaces.messages_count import count_input_tokens
from switchboard.surfaces.request_body import parse_json_object
from switchboard.upstream.native import ANTHROPIC_COUNT_TOKENS
from switchboard.upstream.types import UpstreamTarget


async def count_tokens(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    body = parse_json_object(raw)
    messages_request.check_count_body(body)
    lines = messages_request.provider_headers(headers)
    pipeline.db_outage.check()
    async with SessionOnDemand(pipeline.sessionmaker, pipeline.engine) as sessions:
        call = await prepare_call(
            pipeline=pipeline,
            sessions=sessions,
            principal=principal,
            headers=headers,
            body=body,
            endpoint="messages",
            stream=False,
            request_id=request_id,
            provider_headers=lines,
            from_agent=messages_request.from_agent,
        )
    first = first_attempt(call)
    model, credential = first.model, first.credential
    answer_headers = {
        "x-switchboard-model": f"{model.provider}/{model.model}",
        "x-switchboard-credential": str(credential.id) if credential.id else "deployment",
    }
    if model.provider == "anthropic":
        target = UpstreamTarget(
            provider=model.provider,
            model=model.model,
            secret=await pipeline.credentials.reveal(credential),
            base_url=credential.base_url,
            allow_private=pipeline.settings.allow_private_upstreams,
        )
        reply = await pipeline.upstream.native.json(target, ANTHROPIC_COUNT_TOKENS, first.body, lines)
        answer = reply.body
    else:
        answer = orjson.dumps({"input_tokens": count_input_tokens(first.body)})
    return Response(answer, media_type="application/json", headers=answer_headers)
