"""An attempt's body is built from the call request's without changing it (llm/call_attempt.py)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from switchboard.auth.principal import Principal
from switchboard.catalog.routing_settings import RoutingSettings
from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef
from switchboard.limits import enforce
from switchboard.llm.call_attempt import body_for, first_attempt, model_max, next_attempt, with_cap
from switchboard.llm.context import CallRequest
from switchboard.routing.route import Route


def _route(provider: str, model: str) -> Route:
    credential = CredentialRef(id=None, scope="deployment", provider=provider, base_url=None)
    return Route(ModelEntry(provider=provider, model=model), credential, RoutingSettings())


def _request(body: dict[str, Any], *routes: Route) -> CallRequest:
    return CallRequest(
        principal=Principal(user_id=uuid.uuid4()),
        request_id="req",
        endpoint="chat.completions",
        selector=str(body.get("model")),
        body=body,
        stream=False,
        room_id=None,
        economy_id=uuid.uuid4(),
        agent_id=None,
        session_id=None,
        idempotency_key=None,
        started=time.perf_counter(),
        routes=list(routes),
    )


def _client_body() -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def test_a_body_that_needs_no_change_is_sent_as_it_came() -> None:
    body = {"model": "gpt-4o-mini", "messages": []}
    assert body_for(body, "gpt-4o-mini", "", None) is body
    assert body_for(body, "gpt-4o-mini", "max_tokens", 5) is not body
    assert body == {"model": "gpt-4o-mini", "messages": []}


def test_an_attempt_changes_a_copy_of_the_top_level_only() -> None:
    body = _client_body()
    sent = body_for(body, "gpt-4o-mini", "max_tokens", 7)
    assert sent == {**_client_body(), "model": "gpt-4o-mini", "max_tokens": 7}
    assert body == _client_body()  # the client's body, as it came
    assert sent["messages"] is body["messages"]  # a shallow copy: nothing below the top level is copied


def test_every_attempt_is_built_from_the_request_and_leaves_it_and_earlier_attempts_as_they_were() -> None:
    body = _client_body()
    request = _request(body, _route("openai", "gpt-4o-mini"), _route("anthropic", "claude-3-5-haiku-latest"))
    field = enforce.cap_field("chat.completions")
    first = with_cap(first_attempt(request), 50_000)
    assert (first.number, first.body["model"], first.body[field]) == (1, "gpt-4o-mini", 50_000)
    second = next_attempt(first, request.routes[1], gateway_cap=50_000)
    cap = min(50_000, model_max("chat.completions", request.routes[1].model))
    assert (second.number, second.body["model"], second.body[field]) == (2, "claude-3-5-haiku-latest", cap)
    assert first.body["model"] == "gpt-4o-mini" and first.body[field] == 50_000
    assert body == _client_body()
    assert next_attempt(second, request.routes[1], gateway_cap=None).body == {
        **_client_body(),
        "model": "claude-3-5-haiku-latest",
    }  # a caller's own cap (here none) is left as sent


def test_a_call_request_and_its_attempts_cannot_be_changed() -> None:
    request = _request(_client_body(), _route("openai", "gpt-4o-mini"))
    attempt = first_attempt(request)
    with pytest.raises(AttributeError):
        request.body = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        attempt.number = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        attempt.extra = 1  # type: ignore[attr-defined]  # no per-call __dict__ either
