"""A real OTLP/HTTP trace receiver for the tests: decodes each ExportTraceServiceRequest it is sent."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

Message = MutableMapping[str, Any]
SERVER, CLIENT = Span.SPAN_KIND_SERVER, Span.SPAN_KIND_CLIENT
ERROR = Status.STATUS_CODE_ERROR


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":  # a string array such as gen_ai.response.finish_reasons
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str  # hex, as in a traceparent
    span_id: str
    parent_span_id: str  # "" for a root span
    name: str
    kind: int
    status: int
    attributes: dict[str, Any]
    service: str


class OtlpReceiver:
    """The ASGI app of the receiver: POST /v1/traces, protobuf in, protobuf out."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.bodies: list[bytes] = []
        self.content_types: list[str] = []
        self._lock = threading.Lock()

    async def __call__(
        self,
        scope: Message,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"].rsplit(".", 1)[-1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status = 404
        answer = b""
        if scope["method"] == "POST" and scope["path"] == "/v1/traces":
            self._take(body, dict(scope["headers"]).get(b"content-type", b"").decode())
            status, answer = 200, ExportTraceServiceResponse().SerializeToString()
        headers = [
            (b"content-type", b"application/x-protobuf"),
            (b"content-length", str(len(answer)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    def _take(self, body: bytes, content_type: str) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=span.kind,
                            status=span.status.code,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            service=str(resource.get("service.name")),
                        )
                    )
        with self._lock:
            self.bodies.append(body)
            self.content_types.append(content_type)
            self.spans.extend(found)

    def trace(
        self, trace_id: str, *, until: Callable[[list[ReceivedSpan]], bool], timeout: float = 10
    ) -> list[ReceivedSpan]:
        """The trace's spans once `until` holds of them; the exporter sends within its 5 s batch delay."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                spans = [span for span in self.spans if span.trace_id == trace_id]
            if until(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.05)
