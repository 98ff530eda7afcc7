"""A fake LLM provider on a real socket: OpenAI, Anthropic Messages and Gemini wire formats, scripted.

Tests script behaviour per model name (`script`) or for the next call (`enqueue`), then read what the
provider received (`received`) and which calls the client abandoned (`disconnects`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import orjson

from tests.fakes import anthropic_wire, gemini_wire, openai_wire, responses_wire
from tests.fakes.key_behaviour import KeyBehaviours, drop_connection
from tests.fakes.script import Disconnect, Kind, Received, Script, billed_prompt_tokens

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEFAULT_MODELS = ["gpt-4o-mini", "text-embedding-3-small", "claude-3-5-haiku-latest", "gemini-2.0-flash"]
STALL_SECONDS = 300.0


class ConnectionDropped(Exception):
    """Raised inside the app after the response started: uvicorn then closes the socket mid-body."""


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ConnectionDropped))


logging.getLogger("uvicorn.error").addFilter(_QuietDrops())


class _Watcher:
    """Listens for `http.disconnect` while the handler is writing or waiting."""

    def __init__(self, receive: Receive) -> None:
        self.gone = asyncio.Event()
        self._task = asyncio.create_task(self._listen(receive))

    async def _listen(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone.set()

    async def sleep(self, seconds: float) -> bool:
        """Wait; True when the client went away meanwhile."""
        if seconds <= 0:
            await asyncio.sleep(0)  # let the listener see a disconnect that already happened
            return self.gone.is_set()
        try:
            await asyncio.wait_for(self.gone.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def stop(self) -> None:
        self._task.cancel()


class _ClientGone(Exception):
    pass


class FakeProvider:
    def __init__(self) -> None:
        self.base_url = ""  # set by the fixture once the server listens
        self.models = list(DEFAULT_MODELS)
        self.requests: list[Received] = []
        self.disconnects: list[Disconnect] = []
        self._scripts: dict[str, Script] = {}
        self._released: set[str] = set()  # models whose held calls may answer (set from the test thread)
        self._queue: deque[tuple[str | None, Script]] = deque()
        self._ids = itertools.count(1)
        self.keys = KeyBehaviours()
        self.app = self  # the ASGI callable (uvicorn recognises ASGI 3 by an async __call__)

    # --- what tests call -------------------------------------------------------------------------
    def script(self, model: str, **behaviour: Any) -> Script:
        """Every call for `model` behaves so until cleared."""
        self._scripts[model] = script = Script(**behaviour)
        return script

    def enqueue(self, model: str | None = None, **behaviour: Any) -> Script:
        """The next call (for `model`, or any model) behaves so, once."""
        script = Script(**behaviour)
        self._queue.append((model, script))
        return script

    def clear(self) -> None:
        self._scripts.clear()
        self._queue.clear()

    def release(self, model: str) -> None:
        """Held calls for `model` answer now, and later ones at once."""
        self._released.add(model)

    def received(self, model: str | None = None) -> list[Received]:
        return [r for r in list(self.requests) if model is None or r.model == model]

    def disconnects_of(self, model: str | None = None) -> list[Disconnect]:
        return [d for d in list(self.disconnects) if model is None or d.model == model]

    async def wait_disconnect(self, model: str | None, timeout: float = 2.0) -> Disconnect | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := self.disconnects_of(model):
                return found[-1]
            await asyncio.sleep(0.01)
        return None

    def wait_disconnect_sync(self, model: str | None, timeout: float = 2.0) -> Disconnect | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := self.disconnects_of(model):
                return found[-1]
            time.sleep(0.01)
        return None

    # --- the ASGI app ----------------------------------------------------------------------------
    def _pick(self, model: str | None) -> Script:
        for index, (wanted, script) in enumerate(list(self._queue)):
            if wanted is None or wanted == model:
                del self._queue[index]
                return script
        return self._scripts.get(model or "", Script())

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self._handle(scope, raw, receive, send)

    async def _handle(self, scope: Message, raw: bytes, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        query = scope.get("query_string", b"").decode()
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            await _send_json(
                send, 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}
            )
            return
        route = _route(scope["method"], path)
        if route is None:
            await _send_json(
                send, 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}
            )
            return
        kind, operation, path_model = route
        model = path_model or (body.get("model") if isinstance(body, dict) else None)
        stream = operation == "streamGenerateContent" or bool(isinstance(body, dict) and body.get("stream"))
        record = Received(
            kind=kind,
            method=scope["method"],
            path=path,
            query=query,
            headers=headers,
            api_key=_api_key(headers, query),
            body=body,
            model=model,
            at=time.monotonic(),
            stream=stream,
        )
        self.requests.append(record)
        chosen = self.keys.for_key(record.api_key, kind)  # tests/fakes/key_behaviour.py
        if chosen is not None and chosen.drop:
            record.status = 0
            await drop_connection(receive)
            return
        script = chosen.script if chosen is not None and chosen.script is not None else self._pick(model)
        watcher = _Watcher(receive)
        try:
            await self._serve(send, watcher, record, script, operation)
        except _ClientGone:
            self.disconnects.append(Disconnect(model, path, time.monotonic(), len(record.sent)))
        except asyncio.CancelledError:
            self.disconnects.append(Disconnect(model, path, time.monotonic(), len(record.sent)))
            raise
        finally:
            watcher.stop()
            record.finished_at = time.monotonic()

    async def _serve(self, send: Send, watcher: _Watcher, record: Received, script: Script, op: str) -> None:
        while script.held and record.model not in self._released:
            if await watcher.sleep(0.02):  # polled: `release` comes from another thread
                raise _ClientGone
        if await watcher.sleep(script.first_byte_delay):
            raise _ClientGone
        body: dict[str, Any] = record.body if isinstance(record.body, dict) else {}
        if script.count_prompt:
            script = dataclasses.replace(script, prompt_tokens=billed_prompt_tokens(body))
        wire = {"openai": openai_wire, "anthropic": anthropic_wire, "gemini": gemini_wire}[record.kind]
        if script.fail is not None:
            status, error = wire.error(script, record.api_key)
            extra = (
                {"retry-after": script.retry_after}
                if script.fail == "rate_limit" and script.retry_after
                else {}
            )
            record.status = status
            await _send_json(send, status, error, extra)
            return
        refusal = openai_wire.cap_refusal(body) if op == "chat" else None
        if refusal is not None:
            record.status = 400
            await _send_json(send, 400, refusal)
            return
        n = next(self._ids)
        if op == "models":
            await _send_json(send, 200, openai_wire.models_body(self.models))
        elif op == "count_tokens":  # Anthropic's count: the script's prompt tokens
            await self._send_body(send, record, script, {"input_tokens": script.prompt_tokens})
        elif op == "embeddings":
            await self._send_body(send, record, script, openai_wire.embeddings_body(script, body))
        elif op in ("embedContent", "batchEmbedContents"):
            payload = gemini_wire.embed_body(script, body, batch=op == "batchEmbedContents")
            await self._send_body(send, record, script, payload)
        elif record.stream:
            events = iter(script.answer_events) if script.answer_events is not None else None
            events = events or self._events(record, script, body, n)
            await self._send_stream(send, watcher, record, script, events)
        else:
            payload = script.answer if script.answer is not None else self._reply(record, script, body, n)
            await self._send_body(send, record, script, payload)

    @staticmethod
    def _reply(record: Received, script: Script, body: dict[str, Any], n: int) -> dict[str, Any]:
        if record.path.endswith("/v1/responses"):
            return responses_wire.response_body(script, body, f"resp_fake{n}")
        if record.kind == "openai" and record.path.endswith("/v1/completions"):
            return openai_wire.completion_body(script, body, f"cmpl-fake-{n}")
        if record.kind == "openai":
            return openai_wire.chat_body(script, body, f"chatcmpl-fake-{n}")
        if record.kind == "anthropic":
            return anthropic_wire.message_body(script, body, f"msg_fake_{n}")
        return gemini_wire.content_body(script, body, record.model or "", f"resp-fake-{n}")

    @staticmethod
    def _events(record: Received, script: Script, body: dict[str, Any], n: int) -> Iterator[bytes]:
        if record.path.endswith("/v1/responses"):
            return responses_wire.response_events(script, body, f"resp_fake{n}")
        if record.kind == "openai" and record.path.endswith("/v1/completions"):
            return openai_wire.completion_events(script, body, f"cmpl-fake-{n}")
        if record.kind == "openai":
            return openai_wire.chat_events(script, body, f"chatcmpl-fake-{n}")
        if record.kind == "anthropic":
            return anthropic_wire.message_events(script, body, f"msg_fake_{n}")
        return gemini_wire.content_events(script, body, record.model or "", f"resp-fake-{n}")

    @staticmethod
    async def _send_body(send: Send, record: Received, script: Script, payload: dict[str, Any]) -> None:
        data = orjson.dumps(payload)
        record.sent.append(data)
        if script.break_after is None:
            await _send_json(send, 200, payload)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data[: len(data) // 2], "more_body": True})
        raise ConnectionDropped

    @staticmethod
    async def _send_stream(
        send: Send, watcher: _Watcher, record: Received, script: Script, events: Iterator[bytes]
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
            }
        )
        for index, event in enumerate(events):
            if script.break_after is not None and index >= script.break_after:
                raise ConnectionDropped
            stalled = script.stall_after is not None and index >= script.stall_after
            if stalled and await watcher.sleep(STALL_SECONDS):
                raise _ClientGone
            if await watcher.sleep(script.chunk_delay if index else 0):
                raise _ClientGone
            # recorded before the send: a client may read the event and look here before send returns
            record.sent.append(event)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        if script.stall_after is not None and await watcher.sleep(STALL_SECONDS):
            raise _ClientGone  # told to stall after more events than there were: hold the body open
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _route(method: str, path: str) -> tuple[Kind, str, str | None] | None:
    """(kind, operation, model from the path); suffix matching lets base URLs carry a prefix."""
    if method == "GET" and path.endswith("/v1/models"):
        return "openai", "models", None
    if method != "POST":
        return None
    if path.endswith("/v1/chat/completions"):
        return "openai", "chat", None
    if path.endswith("/v1/embeddings"):
        return "openai", "embeddings", None
    if path.endswith("/v1/completions"):
        return "openai", "completions", None
    if path.endswith("/v1/responses"):
        return "openai", "responses", None
    if path.endswith("/v1/messages"):
        return "anthropic", "messages", None
    if path.endswith("/v1/messages/count_tokens"):
        return "anthropic", "count_tokens", None
    azure = "/openai/deployments/"  # Azure OpenAI: the deployment is in the path, the wire is OpenAI's
    if azure in path and path.endswith("/chat/completions"):
        return "openai", "chat", path.split(azure, 1)[1].removesuffix("/chat/completions")
    marker = "/v1beta/models/"
    if marker in path and ":" in path:
        model, _, operation = path.split(marker, 1)[1].rpartition(":")
        return "gemini", operation, model
    return None


def _api_key(headers: dict[str, str], query: str) -> str | None:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:]
    for name in ("x-api-key", "x-goog-api-key", "api-key"):  # api-key: Azure's
        if name in headers:
            return headers[name]
    keys = parse_qs(query).get("key")
    return keys[0] if keys else None


async def _send_json(send: Send, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
    data = orjson.dumps(payload)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
