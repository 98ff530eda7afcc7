"""Model calls skip FastAPI (llm/fast_routes.py) and answer exactly as the framework routes would.

Two gateways on one fake provider, one with the fast path and one without, get the same requests;
everything a client can see (status, body, the headers that matter) must be the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayFactory
from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.support.gateway import Gateway, User

LIMIT = 4096
ENV = {"SWITCHBOARD_MAX_BODY_BYTES": str(LIMIT)}
# Per response: the request id, the provider's completion id and timestamps differ call by call.
VOLATILE = {"id", "created", "system_fingerprint"}
COMPARED_HEADERS = (
    "content-type",
    "www-authenticate",
    "x-switchboard-model",
    "retry-after",
    "idempotent-replayed",
)


@pytest.fixture(scope="module")
def pair(make_gateway: GatewayFactory) -> dict[str, Gateway]:
    return {
        "fast": make_gateway(env=ENV),
        "framework": make_gateway(env=ENV, fast_model_calls=False),
    }


@pytest.fixture(scope="module")
def users(pair: dict[str, Gateway], fake_provider: Any) -> Iterator[dict[str, User]]:
    made = {name: gateway.user() for name, gateway in pair.items()}
    for user in made.values():
        add_credential(user, "openai", provider_base(fake_provider, "openai"))
    yield made


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def _seen(response: httpx.Response) -> dict[str, Any]:
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        body: Any = _normalise(response.json())
    elif kind.startswith("text/event-stream"):
        events = [e for e in response.text.split("\n\n") if e]
        body = [
            e if e == "data: [DONE]" else _normalise(httpx.Response(200, content=e[6:]).json())
            for e in events
        ]
    else:
        body = response.text
    headers = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    return {
        "status": response.status_code,
        "body": body,
        "headers": headers,
        "rid": "x-request-id" in response.headers,
    }


Case = Callable[[User, str], httpx.Response]


def _chat(user: User, model: str, **extra: Any) -> httpx.Response:
    body = {"model": f"openai/{model}", "messages": [{"role": "user", "content": "hi"}], **extra}
    return user.client.post("/v1/chat/completions", json=body)


def _oversized_chunked(user: User, model: str) -> httpx.Response:
    def chunks() -> Iterator[bytes]:
        yield b'{"model": "openai/' + model.encode() + b'", "messages": [{"role": "user", "content": "'
        for _ in range(4):
            yield b"x" * 2048
        yield b'"}]}'

    return user.client.post("/v1/chat/completions", content=chunks())


def _twice_with_one_key(user: User, model: str) -> httpx.Response:
    body = {"model": f"openai/{model}", "messages": [{"role": "user", "content": "once"}]}
    headers = {"idempotency-key": f"k-{model}"}
    first = user.client.post("/v1/chat/completions", json=body, headers=headers)
    assert first.status_code == 200, first.text
    return user.client.post("/v1/chat/completions", json=body, headers=headers)


CASES: dict[str, Case] = {
    "completion": lambda user, model: _chat(user, model),
    "stream with usage": lambda user, model: _chat(
        user, model, stream=True, stream_options={"include_usage": True}
    ),
    "embeddings": lambda user, model: user.client.post(
        "/v1/embeddings", json={"model": f"openai/{model}", "input": "hello"}
    ),
    "no token": lambda user, model: httpx.post(
        f"{str(user.client.base_url).rstrip('/')}/v1/chat/completions", json={"model": "openai/x"}
    ),
    "bad token": lambda user, model: httpx.post(
        f"{str(user.client.base_url).rstrip('/')}/v1/embeddings",
        json={"model": "openai/x", "input": "a"},
        headers={"authorization": "Bearer nope"},
    ),
    "malformed json": lambda user, model: user.client.post(
        "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    ),
    "empty body": lambda user, model: user.client.post("/v1/chat/completions", content=b""),
    "no messages": lambda user, model: user.client.post("/v1/chat/completions", json={"model": "x"}),
    "bad stream flag": lambda user, model: _chat(user, model, stream="yes"),
    "unknown model": lambda user, model: user.client.post(
        "/v1/chat/completions",
        json={"model": "nosuch/thing", "messages": [{"role": "user", "content": "hi"}]},
    ),
    "bad room header": lambda user, model: user.client.post(
        "/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-working-group-id": "not-a-uuid"},
    ),
    "declared body over the limit": lambda user, model: user.client.post(
        "/v1/chat/completions", content=b"x" * (LIMIT + 1), headers={"content-type": "application/json"}
    ),
    "chunked body over the limit": _oversized_chunked,
    "provider 429": lambda user, model: _chat(user, f"{model}-limited"),
    "idempotent replay": lambda user, model: _twice_with_one_key(user, model),
    "GET is not a model call": lambda user, model: user.client.get("/v1/chat/completions"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_fast_path_answers_as_the_framework_route(
    case: str, pair: dict[str, Gateway], users: dict[str, User], fake_provider: Any
) -> None:
    model = unique_model("fast")
    fake_provider.script(model, reply="Same answer.", prompt_tokens=5, completion_tokens=2)
    fake_provider.script(f"{model}-limited", fail="rate_limit", retry_after="3")
    seen = {name: _seen(CASES[case](users[name], model)) for name in pair}
    assert seen["fast"] == seen["framework"]
    assert seen["fast"]["rid"], "every answer carries x-request-id"


def test_both_paths_meter_the_call(
    pair: dict[str, Gateway], users: dict[str, User], fake_provider: Any
) -> None:
    model = unique_model("fast")
    fake_provider.script(model, reply="Metered.", prompt_tokens=7, completion_tokens=3)
    for name in pair:
        assert _chat(users[name], model).status_code == 200
        records = users[name].client.get("/usage/me").json()["data"]
        mine = [r for r in records if r["model"] == model]
        assert [(r["prompt_tokens"], r["completion_tokens"], r["status"]) for r in mine] == [(7, 3, "ok")]
