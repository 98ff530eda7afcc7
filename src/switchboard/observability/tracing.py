"""OpenTelemetry traces over OTLP/HTTP, only when configured (SPEC §17).

`ON` is False until `configure` is given an endpoint; every hook checks it first, so a gateway
without tracing pays one module attribute read per event and never imports the SDK. With it on:
one SERVER span per request (continuing the client's `traceparent`), one CLIENT span per provider
attempt under it, and the attempt's span named as parent in the `traceparent` sent to the provider.
Prompt and completion text are never recorded: attributes are names, counts and ids.
"""

from __future__ import annotations

import logging
from typing import Any

from switchboard.observability.attempt import AttemptFacts, SettledCall
from switchboard.observability.metrics import operation_of
from switchboard.observability.request import RequestTelemetry

log = logging.getLogger("switchboard.tracing")

FINISH_REASONS = "gen_ai.response.finish_reasons"  # a string array (OTel GenAI conventions)

ON = False
_tracer: Any = None
_provider: Any = None
_propagator: Any = None
_kinds: Any = None  # opentelemetry.trace.SpanKind
_error: Any = None  # Status(StatusCode.ERROR), built once
_in_context: Any = None  # opentelemetry.trace.set_span_in_context


def configure(endpoint: str, service_name: str) -> None:
    """Starts exporting spans to `endpoint` (the full OTLP/HTTP traces URL); '' leaves tracing off."""
    global ON, _tracer, _provider, _propagator, _kinds, _error, _in_context
    if not endpoint or ON:
        return
    # Imported here: a gateway that does not trace never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from switchboard import API_VERSION

    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name, "service.version": API_VERSION})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    _provider = provider
    _tracer = provider.get_tracer("switchboard", API_VERSION)
    _propagator = TraceContextTextMapPropagator()
    _kinds = SpanKind
    _error = Status(StatusCode.ERROR)
    _in_context = set_span_in_context
    ON = True
    log.info("tracing: spans go to %s", endpoint)


def shutdown() -> None:
    """Exports what is pending, then turns tracing off."""
    global ON, _provider
    ON = False
    if _provider is not None:
        _provider.shutdown()
        _provider = None


def _headers_of(scope: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        if name in (b"traceparent", b"tracestate"):
            found[name.decode("latin-1")] = value.decode("latin-1")
    return found


def start_server(request: RequestTelemetry, scope: Any, name: str) -> None:
    """The request's SERVER span, a child of the client's `traceparent` when it sent one."""
    parent = _propagator.extract(_headers_of(scope))
    request.span = _tracer.start_span(
        name,
        context=parent,
        kind=_kinds.SERVER,
        attributes={
            "http.request.method": scope.get("method", ""),
            "url.path": scope.get("path", ""),
            "switchboard.request.id": request.request_id,
        },
    )


def end_server(request: RequestTelemetry, status: int) -> None:
    span = request.span
    request.span = None
    if request.attempt_span is not None:  # a call that never settled (it cannot, but never leak a span)
        request.attempt_span.end()
        request.attempt_span = None
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(_error)
        span.set_attribute("error.type", str(status))
    span.end()


def start_attempt(request: RequestTelemetry, call: AttemptFacts) -> None:
    """A CLIENT span for the attempt `call` now makes (its model, credential and number)."""
    if request.attempt_span is not None:
        _end_attempt(request, 0, 0)  # the attempt before, failed: its record carries no tokens
    operation = operation_of(call.endpoint)
    parent = _in_context(request.span) if request.span is not None else None
    request.attempt_span = _tracer.start_span(
        f"{operation} {call.model.model}",
        context=parent,
        kind=_kinds.CLIENT,
        attributes={
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": call.model.provider,
            "gen_ai.request.model": call.model.model,
            "switchboard.economy.id": str(call.economy_id),
            "switchboard.credential.scope": call.credential.scope,
            "switchboard.attempt": call.number,
            "switchboard.endpoint": call.endpoint,
        },
    )


def attempt_failed(request: RequestTelemetry, error_type: str) -> None:
    span = request.attempt_span
    if span is not None:
        span.set_status(_error)
        span.set_attribute("error.type", error_type)


def provider_headers(request: RequestTelemetry) -> bytes:
    """The `traceparent` header line naming the attempt's span, for the provider request."""
    span = request.attempt_span
    if span is None:
        return b""
    context = span.get_span_context()
    return b"traceparent: 00-%032x-%016x-%02x\r\n" % (context.trace_id, context.span_id, context.trace_flags)


def finish_reasons(request: RequestTelemetry, reasons: list[str]) -> None:
    """The answer's finish reasons, on the attempt's span and on the request's (the answer the client
    got is the last attempt's); the latest said wins."""
    if not reasons:
        return
    if request.attempt_span is not None:
        request.attempt_span.set_attribute(FINISH_REASONS, reasons)
    if request.span is not None:
        request.span.set_attribute(FINISH_REASONS, reasons)


def call_settled(request: RequestTelemetry, outcome: SettledCall) -> None:
    """Ends the last attempt's span with the usage its record carries."""
    span = request.attempt_span
    if span is None:
        return
    if outcome.status != "ok":
        attempt_failed(request, outcome.error_code or outcome.status)
    span.set_attribute("gen_ai.response.model", outcome.model)
    _end_attempt(request, outcome.prompt_tokens, outcome.completion_tokens)


def _end_attempt(request: RequestTelemetry, prompt_tokens: int, completion_tokens: int) -> None:
    span = request.attempt_span
    request.attempt_span = None
    span.set_attribute("gen_ai.usage.input_tokens", prompt_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", completion_tokens)
    span.end()
