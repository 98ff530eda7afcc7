"""Relays a prepared call to its provider and meters it: JSON bodies and SSE streams."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
from starlette.responses import Response

from switchboard.cache.remember import remember_json, remember_stream
from switchboard.cache.request import HEADER as CACHE_HEADER
from switchboard.cache.request import CacheTicket
from switchboard.errors import SwitchboardError, error_code_of
from switchboard.llm.attempts import ATTEMPTS_HEADER, Attempts
from switchboard.llm.call_attempt import Attempt
from switchboard.llm.idempotent import stored_from
from switchboard.llm.ledger import Reservation, settle
from switchboard.llm.outcomes import (
    USAGE_ESTIMATED,
    build_outcome,
    estimate_answer_usage,
    estimate_usage,
)
from switchboard.llm.services import Pipeline
from switchboard.llm.sse_response import SSEResponse
from switchboard.metering.outcome import CallStatus
from switchboard.observability import events as telemetry
from switchboard.surfaces.codec import Codec
from switchboard.surfaces.stream import SurfaceStream
from switchboard.upstream.prices import litellm_max_output
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget
from switchboard.wire.sse import DONE, frame

# A relayed stream carried an event that is not JSON: passed on untouched, and said in the record.
UPSTREAM_MALFORMED = "upstream_malformed"
SSE_TYPE = "text/event-stream; charset=utf-8"


def gateway_headers(attempt: Attempt, reservation: Reservation, ticket: CacheTicket | None) -> dict[str, str]:
    """The answering attempt's model and credential, and how many attempts the call took."""
    model, credential = attempt.route.model, attempt.route.credential
    headers = {
        "x-switchboard-model": f"{model.provider}/{model.model}",
        "x-switchboard-credential": str(credential.id) if credential.id else "deployment",
        ATTEMPTS_HEADER: "1" if attempt.number == 1 else str(attempt.number),
    }
    if reservation.hold is not None:
        headers.update(reservation.hold.headers)
    if ticket is not None:
        headers[CACHE_HEADER] = "miss"  # a hit says so itself (llm/cached_answers.py)
    return headers


class _JSONReply(Response):
    """A relayed JSON body with headers known to be well-formed: Response.init_headers is skipped."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        self.status_code = 200
        self.body = body
        self.background = None
        self.raw_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *((name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()),
        ]


async def _target(pipeline: Pipeline, attempt: Attempt) -> UpstreamTarget:
    model, credential = attempt.route.model, attempt.route.credential
    secret = await pipeline.credentials.reveal(credential)
    settings, routing = pipeline.settings, attempt.route.settings
    # The route's timeouts where tighter than the deployment's: the upstream applies them itself.
    first_byte = routing.first_byte_timeout_s
    connect = routing.connect_timeout_s
    return UpstreamTarget(
        provider=model.provider,
        model=model.model,
        secret=secret,
        base_url=credential.base_url,
        allow_private=settings.allow_private_upstreams,
        first_byte=first_byte if first_byte < settings.upstream_first_byte_timeout else None,
        connect=connect if connect < settings.upstream_connect_timeout else None,
        trace_headers=telemetry.provider_headers(),  # the attempt's traceparent, when tracing is on
    )


def _model_max(attempt: Attempt) -> int | None:
    """The attempt's model's largest answer, as litellm's map knows it."""
    return litellm_max_output(attempt.model.provider, attempt.model.model)


async def _ask_json(pipeline: Pipeline, attempt: Attempt, codec: Codec) -> UpstreamReply:
    """One attempt at a non-streamed answer, with the attempt's model, credential and body: in the
    surface's own format to a provider that speaks it, else over chat and back."""
    target = await _target(pipeline, attempt)
    body = attempt.body
    if codec.speaks(attempt.model.provider):
        return await codec.relay(pipeline.upstream, target, body, attempt.request.provider_headers)
    chat_request = codec.to_chat(body, _model_max(attempt) if codec.caps_output else None)
    return codec.answer(await pipeline.upstream.chat(target, chat_request), body)


async def relay_json(
    pipeline: Pipeline, first: Attempt, reservation: Reservation, ticket: CacheTicket | None, codec: Codec
) -> Response:
    """A non-streamed answer in the call's surface: one JSON body, recorded before it is sent."""
    attempts = Attempts(pipeline, first, reservation)
    reply = await attempts.walk(lambda: _ask_json(pipeline, attempts.current, codec))
    attempts.done()
    last = attempts.current
    usage, error_code = reply.usage, None
    if usage is None:  # an answer the client got and the provider did not count: never free
        usage, error_code = estimate_answer_usage(last.body, reply.body, codec.name), USAGE_ESTIMATED
    headers = gateway_headers(last, reservation, ticket)
    stored = None
    if reservation.claim is not None:
        stored = stored_from(200, {**headers, "content-type": "application/json"}, reply.body)
    # Record, limit settlement and replayable answer in one transaction, before the answer goes out.
    outcome = build_outcome(last, status="ok", usage=usage, error_code=error_code)
    await settle(pipeline, last, reservation, outcome, stored)
    if ticket is not None and error_code is None:  # an answer the provider counted: complete
        await remember_json(pipeline.cache, ticket, last.model, last.credential, reply.body, usage)
    pipeline.credentials.touch(last.credential)
    return _JSONReply(reply.body, headers)


def _error_event(error: BaseException) -> bytes:
    """A chat or text-completion stream's last event when it broke off after it began: the
    provider's own error chunk as it came (upstream/sse.py), else the gateway's."""
    if isinstance(error, SwitchboardError) and error.provider_event:
        return error.provider_event
    if isinstance(error, SwitchboardError):
        payload = {
            "error": {
                "message": error.message,
                "type": error.openai_type,
                "param": None,
                "code": error.openai_code or error.code.lower(),
            }
        }
    else:
        payload = {
            "error": {
                "message": "the provider stream failed",
                "type": "api_error",
                "param": None,
                "code": "upstream_error",
            }
        }
    return frame(payload)


def _ending(stream: UpstreamStream) -> bytes:
    """What a stream's client gets once the call is settled: [DONE], or a surface's last event."""
    return stream.end if isinstance(stream, SurfaceStream) else DONE


def _open_stream(
    pipeline: Pipeline, target: UpstreamTarget, attempt: Attempt, codec: Codec
) -> UpstreamStream:
    body = attempt.body
    if codec.speaks(attempt.model.provider):
        return codec.relay_stream(pipeline.upstream, target, body, attempt.request.provider_headers)
    chat_request = codec.to_chat(body, _model_max(attempt) if codec.caps_output else None)
    return codec.stream(pipeline.upstream.chat_stream(target, chat_request), body)


async def _ask_stream(
    pipeline: Pipeline, attempt: Attempt, codec: Codec
) -> tuple[UpstreamStream, StreamEvent | None]:
    """One attempt at a stream, up to its first event: nothing has reached the client before it."""
    target = await _target(pipeline, attempt)
    stream = _open_stream(pipeline, target, attempt, codec)
    return stream, await anext(stream, None)


async def relay_stream(
    pipeline: Pipeline,
    first_attempt: Attempt,
    reservation: Reservation,
    ticket: CacheTicket | None,
    wants_usage: bool,
    codec: Codec,
) -> SSEResponse:
    """Streamed completion: errors before the first chunk are plain JSON errors (raised), after
    every attempt the plan allows."""
    attempts = Attempts(pipeline, first_attempt, reservation)
    stream, first = await attempts.walk(lambda: _ask_stream(pipeline, attempts.current, codec))
    last = attempts.current  # no attempt follows the first event (SPEC §14)
    ttft_ms = int((time.perf_counter() - last.request.started) * 1000)
    claim = reservation.claim

    sent: list[bytes] = []  # kept only for an Idempotency-Key, whose retry replays these bytes
    kept: list[StreamEvent] | None = [] if ticket is not None else None  # every event, for the cache

    async def finish(
        outcome_status: CallStatus, error_code: str | None, failure: Exception | None, relayed: int
    ) -> None:
        attempts.done(failure)
        with anyio.CancelScope(shield=True):
            await stream.aclose()
            usage, estimated = stream.usage, False
            if usage is None and relayed:  # content reached the client, its count did not
                usage, estimated = estimate_usage(last.body, relayed), True
                if outcome_status != "error":  # an error's code names the failure instead
                    error_code = USAGE_ESTIMATED
            if stream.malformed and outcome_status != "error":  # relayed as it came, still metered
                error_code = UPSTREAM_MALFORMED
            stored = None
            if claim is not None and outcome_status == "ok":
                body = b"".join(sent) + _ending(stream)
                stored = stored_from(200, {**headers, "content-type": SSE_TYPE}, body)
            outcome = build_outcome(
                last,
                status=outcome_status,
                usage=usage,
                error_code=error_code,
                ttft_ms=ttft_ms,
                usage_estimated=estimated,
            )
            await settle(pipeline, last, reservation, outcome, stored)
            # Only a complete answer the provider counted is kept: not an error, a cancel or an estimate.
            complete = outcome_status == "ok" and error_code is None
            if ticket is not None and kept is not None and complete and usage is not None:
                await remember_stream(
                    pipeline.cache, ticket, last.model, last.credential, kept, _ending(stream), usage
                )

    async def never_started() -> None:
        # The client left after the provider's first event, before the response began: the provider
        # has the prompt and has begun answering, so the call is billed its estimate (one event).
        await finish("cancelled", None, None, 1)

    async def events() -> AsyncIterator[bytes]:
        outcome_status: CallStatus = "ok"
        error_code: str | None = None
        failure: Exception | None = None  # after the first byte: never another attempt (SPEC §14)
        relayed = 0  # chunks handed to the client, for an estimate if the stream ends uncounted
        telemetry.stream_opened(pipeline.metrics)
        try:
            event = first
            while event is not None:
                # What arrived together goes out in one write: one send per provider read, not per event.
                arrived = (event, *stream.ready())
                relayed += len(arrived)
                if kept is not None:
                    kept.extend(arrived)
                data = b"".join(e.data for e in arrived if wants_usage or not e.is_usage_only)
                if data:
                    if claim is not None:
                        sent.append(data)
                    yield data
                event = await anext(stream, None)
        except anyio.get_cancelled_exc_class():
            outcome_status = "cancelled"
            raise
        except GeneratorExit:
            outcome_status = "cancelled"
            raise
        except Exception as error:
            outcome_status, error_code = "error", error_code_of(error)
            failure = error
        finally:
            telemetry.stream_closed(pipeline.metrics)
            await finish(outcome_status, error_code, failure, relayed)
        # The record, the limits' settlement and the replayable answer are committed (above)
        # before the stream's last event goes out: [DONE], a surface's own last event, or the
        # error event (the provider's as it came, or the gateway's). A cancelled stream re-raised.
        if failure is not None:
            yield stream.error_event(failure) if isinstance(stream, SurfaceStream) else _error_event(failure)
            return
        pipeline.credentials.touch(last.credential)
        yield _ending(stream)

    headers = gateway_headers(last, reservation, ticket)
    return SSEResponse(events(), headers=headers, unstarted=never_started)
