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
        )
    if call.agent_id is not None:
        call.body = messages_request.from_agent(call.body)
    answer_headers = {
        "x-switchboard-model": f"{call.model.provider}/{call.model.model}",
        "x-switchboard-credential": str(call.credential.id) if call.credential.id else "deployment",
    }
    if call.model.provider == "anthropic":
        target = UpstreamTarget(
            provider=call.model.provider,
            model=call.model.model,
            secret=await pipeline.credentials.reveal(call.credential),
            base_url=call.credential.base_url,
            allow_private=pipeline.settings.allow_private_upstreams,
        )
        reply = await pipeline.upstream.native.json(target, ANTHROPIC_COUNT_TOKENS, call.body, lines)
        answer = reply.body
    else:
        answer = orjson.dumps({"input_tokens": count_input_tokens(call.body)})
    return Response(answer, media_type="application/json", headers=answer_headers)
