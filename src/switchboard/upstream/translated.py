"""Providers reached through litellm's translation (the long tail of SPEC §15, and anthropic and
gemini for the differential test), over our pooled, guarded transport."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections import deque
from contextvars import ContextVar
from typing import Any

import httpx

from switchboard.errors import (
    BadRequest,
    SwitchboardError,
    Unprocessable,
    UpstreamForbidden,
    UpstreamUnanswered,
)
from switchboard.upstream import (
    gemini_embeddings,
    litellm_clients,
    private_defaults,
    provider_errors,
    providers,
)
from switchboard.upstream.egress import WRITTEN, Written
from switchboard.upstream.guard_sync import ALLOW_PRIVATE
from switchboard.upstream.litellm_loader import litellm_module
from switchboard.upstream.openai_format import chunk_events, completion_body
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget, Usage

ROOTS = {"anthropic": "https://api.anthropic.com", "gemini": "https://generativelanguage.googleapis.com"}
# OpenAI chat parameters litellm knows how to translate. Anything else is dropped: litellm reads
# many of its own kwargs (api_base, base_url, extra_headers, mock_response, …) from the same
# namespace, and a client must not be able to steer the stored key to another host.
# fmt: off
CHAT_PARAMS = frozenset((
    "messages", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "max_tokens",
    "max_completion_tokens", "n", "presence_penalty", "response_format", "seed", "stop", "temperature",
    "top_p", "tools", "tool_choice", "parallel_tool_calls", "user", "reasoning_effort", "modalities",
    "audio", "prediction", "service_tier", "web_search_options", "functions", "function_call",
    "thinking", "verbosity",
))
# fmt: on

# Kinds whose litellm path calls an OpenAI SDK client's methods rather than an AsyncHTTPHandler's.
# (The OpenAI-compatible kinds would too, but litellm_loader switches them to the handler.)
_SDK_CLIENTS = {
    "azure": "azure",
    "azure_text": "azure",
    "text-completion-openai": "openai",
    "text-completion-inception": "openai",
}

# The responses opened by the current call, so that aclose() can drop the provider connection
# even where litellm's own stream iterator does not close it.
_OPENED: ContextVar[list[httpx.Response] | None] = ContextVar("switchboard_upstream_opened", default=None)


class _SharedTransport(httpx.AsyncBaseTransport):
    """litellm's view of our pool: records responses per call and ignores close (litellm closes the
    clients it builds after a connection error; the pool belongs to the UpstreamClient)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        opened = _OPENED.get()
        if opened is not None:
            opened.append(response)
        return response

    async def aclose(self) -> None:
        return None


def api_base(target: UpstreamTarget) -> str | None:
    """litellm's api_base: the credential's base_url (SPEC §15), else the provider's own endpoint."""
    if target.provider not in ROOTS:
        return target.base_url.rstrip("/") if target.base_url else None  # None: litellm's default
    root = (target.base_url or ROOTS[target.provider]).rstrip("/")
    # litellm appends /v1/messages to Anthropic's base, but /models/{model}:… to Gemini's.
    return root + "/v1beta" if target.provider == "gemini" else root


def header_fields(lines: bytes) -> dict[str, str]:
    """Header lines (`name: value\r\n` each) as the mapping litellm's `extra_headers` takes."""
    fields: dict[str, str] = {}
    for line in lines.decode("latin-1").split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            fields[name.strip()] = value.strip()
    return fields


def credential_kwargs(target: UpstreamTarget) -> dict[str, str]:
    """The secret as litellm's kwargs: `api_key`, or a JSON secret's fields (azure's api_key and
    api_version, bedrock's aws_* keys), whose names are litellm's own."""
    try:
        fields = providers.parse_secret(target.provider, target.secret.reveal())
    except providers.SecretProblem as problem:
        # Stored secrets were checked when saved; a deployment's comes from its environment.
        raise Unprocessable(f"the credential's secret does not fit its provider: {problem}") from None
    return {"api_key": target.secret.reveal()} if fields is None else fields


class TranslatedRelay:
    def __init__(self, pool: ClientPool) -> None:
        self._pool = pool
        self._installed = False
        self._handlers: dict[bool, Any] = {}
        self._http: dict[bool, httpx.AsyncClient] = {}

    async def _call_kwargs(self, target: UpstreamTarget) -> tuple[Any, dict[str, Any]]:
        problem = private_defaults.refusal(target.provider, target.base_url, target.allow_private)
        if problem is not None:  # a deployment credential is refused at start, a stored one at save
            raise UpstreamForbidden(problem)
        litellm = await litellm_module()
        if not self._installed:
            litellm_clients.install(litellm, self._pool)
            self._installed = True
        timeouts = self._pool.timeouts
        secret = credential_kwargs(target)
        base = api_base(target)
        kwargs: dict[str, Any] = {
            "model": f"{target.provider}/{target.model}",
            **secret,
            "client": self._client(target, secret, base),
            # A backstop only: the relay times first byte and idle itself, and the guard caps connect.
            "timeout": timeouts.first_byte + timeouts.idle,
            "num_retries": 0,
        }
        if base is not None:
            kwargs["api_base"] = base
        if target.trace_headers:  # the attempt's traceparent, when tracing is on (SPEC §17)
            kwargs["extra_headers"] = header_fields(target.trace_headers)
        return litellm, kwargs

    def _client(self, target: UpstreamTarget, secret: dict[str, str], base: str | None) -> Any:
        """The client litellm sends this provider's request with, always on our guarded pool.

        Most of litellm's providers take its AsyncHTTPHandler; azure and the text-completion kinds
        take an OpenAI SDK client instead (litellm calls its methods), built per call (~50 µs) so
        that no decrypted key outlives the call.
        """
        sdk = _SDK_CLIENTS.get(target.provider)
        if sdk is None:
            return self._handler(target.allow_private)
        import openai  # loaded with litellm, which depends on it

        http = self._sdk_http(target.allow_private)
        if sdk == "azure":
            return openai.AsyncAzureOpenAI(
                api_key=secret["api_key"],
                api_version=secret["api_version"],
                azure_endpoint=base or "",
                http_client=http,
                max_retries=0,
            )
        return openai.AsyncOpenAI(api_key=secret["api_key"], base_url=base, http_client=http, max_retries=0)

    def _handler(self, allow_private: bool) -> Any:
        handler = self._handlers.get(allow_private)
        if handler is None:
            from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

            transport = _SharedTransport(self._pool.transport(allow_private))
            handler = AsyncHTTPHandler(transport=transport, follow_redirects=False)
            self._handlers[allow_private] = handler
        return handler

    def _sdk_http(self, allow_private: bool) -> httpx.AsyncClient:
        client = self._http.get(allow_private)
        if client is None:
            timeouts = self._pool.timeouts
            client = httpx.AsyncClient(
                transport=_SharedTransport(self._pool.transport(allow_private)),
                timeout=httpx.Timeout(
                    connect=timeouts.connect, read=None, write=timeouts.first_byte, pool=timeouts.connect
                ),
                follow_redirects=False,
                trust_env=False,
            )
            self._http[allow_private] = client
        return client

    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        litellm, kwargs = await self._call_kwargs(target)
        params = _params(body)
        opened: list[httpx.Response] = []
        written = Written()
        token, marker = _OPENED.set(opened), WRITTEN.set(written)
        policy = ALLOW_PRIVATE.set(target.allow_private)  # litellm's side calls (litellm_clients)
        pool = litellm_clients.CALL_POOL.set(self._pool)
        try:
            async with asyncio.timeout(target.first_byte or self._pool.timeouts.first_byte):
                result = await litellm.acompletion(**kwargs, **params, _skip_mcp_handler=True)
        except Exception as exc:
            raise _mapped(exc, target, opened, written) from None
        finally:
            _OPENED.reset(token)
            WRITTEN.reset(marker)
            ALLOW_PRIVATE.reset(policy)
            litellm_clients.CALL_POOL.reset(pool)
            await _close_all(opened)
        usage, payload = completion_body(result)
        return UpstreamReply(body=payload, usage=usage)

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        if not providers.is_native(target.provider):
            raise BadRequest(f"the gateway offers no embeddings from {target.provider} models", param="model")
        if target.provider != "gemini":
            raise BadRequest(f"{target.provider} models do not offer embeddings", param="model")
        return await gemini_embeddings.embed(self._pool, target, body)

    def chat_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream:
        options = body.get("stream_options")
        wants = bool(isinstance(options, dict) and options.get("include_usage"))
        return TranslatedStream(self, target, _params(body), wants)


class TranslatedStream(UpstreamStream):
    def __init__(
        self, relay: TranslatedRelay, target: UpstreamTarget, params: dict[str, Any], wants: bool
    ) -> None:
        self.client_wants_usage = wants
        self.usage: Usage | None = None
        self._relay = relay
        self._target = target
        self._params = params
        self._timeouts = relay._pool.timeouts
        self._wrapper: Any = None  # litellm's CustomStreamWrapper
        self._opened: list[httpx.Response] = []
        self._written = Written()
        self._pending: deque[StreamEvent] = deque()
        self._deadline = 0.0
        self._started = False
        self._closed = False
        self._id: str | None = None  # the first chunk's id, carried by every chunk

    async def _open(self) -> None:
        litellm, kwargs = await self._relay._call_kwargs(
            self._target
        )  # litellm's import is not the provider's time
        first_byte = self._target.first_byte or self._timeouts.first_byte
        self._deadline = asyncio.get_running_loop().time() + first_byte
        token = _OPENED.set(self._opened)
        marker = WRITTEN.set(self._written)
        ALLOW_PRIVATE.set(self._target.allow_private)
        litellm_clients.CALL_POOL.set(self._relay._pool)
        try:
            async with asyncio.timeout_at(self._deadline):
                self._wrapper = await litellm.acompletion(
                    **kwargs,
                    **self._params,
                    stream=True,
                    stream_options={"include_usage": True},
                    _skip_mcp_handler=True,
                )
        finally:
            _OPENED.reset(token)
            WRITTEN.reset(marker)

    async def __anext__(self) -> StreamEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._wrapper is None:
                await self._open()
            while not self._pending:
                timer = (
                    asyncio.timeout(self._timeouts.idle)
                    if self._started
                    else asyncio.timeout_at(self._deadline)
                )
                # Some providers' requests start here, on the first read (litellm's Gemini stream).
                token, marker = _OPENED.set(self._opened), WRITTEN.set(self._written)
                ALLOW_PRIVATE.set(self._target.allow_private)
                litellm_clients.CALL_POOL.set(self._relay._pool)
                try:
                    async with timer:
                        chunk = await anext(self._wrapper, None)
                finally:
                    _OPENED.reset(token)
                    WRITTEN.reset(marker)
                if chunk is None:
                    await self.aclose()
                    raise StopAsyncIteration
                if self._id is None:
                    self._id = getattr(chunk, "id", None) or None
                usage, events = chunk_events(chunk, self._id)
                if usage is not None:
                    self.usage = usage
                self._pending.extend(events)
            self._started = True
            return self._pending.popleft()
        except StopAsyncIteration:
            raise
        except Exception as exc:
            await self.aclose()
            raise _mapped(exc, self._target, self._opened, self._written) from None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._wrapper is not None:
            # litellm's cleanup failing must not keep ours (closing the responses) from running.
            with contextlib.suppress(Exception):
                await self._wrapper.aclose()
        await _close_all(self._opened)


async def _close_all(responses: list[httpx.Response]) -> None:
    for response in responses:
        await response.aclose()  # a no-op once read; mid-body it drops the connection


def _params(body: dict[str, Any]) -> dict[str, Any]:
    """The chat parameters litellm is given: a deep copy, since litellm rewrites some in place (tool
    schemas) and a fallback attempt must see the client's request as it came."""
    return copy.deepcopy({k: v for k, v in body.items() if k in CHAT_PARAMS})


def _mapped(
    error: Exception, target: UpstreamTarget, opened: list[httpx.Response], written: Written
) -> SwitchboardError:
    """`opened`: the provider's answers this call got on our transport; none means litellm's own
    error (every kind offered sends on our transport).
    `written`: a request went out on our transport; timed out unanswered, it is not sent again."""
    if isinstance(error, SwitchboardError):
        return error
    if isinstance(error, TimeoutError) and written.value and not opened:
        return UpstreamUnanswered()
    if isinstance(error, TimeoutError | httpx.HTTPError | OSError):
        return provider_errors.from_transport(error)
    return provider_errors.from_litellm(error, target.secret, provider=target.provider, reached=bool(opened))
