"""Moving on (SPEC §14): to the next key, then the next candidate and the catalog's fallbacks; what the
caller sees in headers and usage records; the last failure when every attempt fails."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.routing.conftest import Caller, key

HAIKU = "anthropic/claude-3-5-haiku-latest"


def test_an_ordinary_call_is_one_attempt_and_one_record(caller: Caller) -> None:
    credential = caller.add_key("openai", key())
    raw = caller.chat()
    assert raw.headers["x-switchboard-attempts"] == "1"
    assert raw.headers["x-switchboard-credential"] == credential
    [record] = caller.records(raw.headers["x-request-id"])
    assert (record["attempt"], record["status"], record["credential_id"]) == (1, "ok", credential)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_provider_that_is_down_falls_back_to_the_catalog_fallback(caller: Caller, stream: bool) -> None:
    down = caller.add_key("openai", key("down"))
    anthropic = caller.add_key("anthropic", key())
    raw = caller.chat(stream=stream)
    if stream:
        assert "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
    else:
        assert raw.parse().choices[0].message.content
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert raw.headers["x-switchboard-model"] == HAIKU
    assert raw.headers["x-switchboard-credential"] == anthropic
    first, second = caller.records(raw.headers["x-request-id"])
    assert {k: first[k] for k in ("attempt", "status", "error_code", "provider", "credential_id")} == {
        "attempt": 1,
        "status": "error",
        "error_code": "LLM_FAILED",
        "provider": "openai",
        "credential_id": down,
    }
    assert (first["prompt_tokens"], first["completion_tokens"], first["cost"]) == (0, 0, "0")
    assert (second["attempt"], second["status"], second["provider"]) == (2, "ok", "anthropic")
    assert second["prompt_tokens"] > 0 and int(second["cost"]) > 0
    # Both records belong to the call: its selector, economy and room.
    assert {(r["selector"], r["economy_id"], r["room_id"], r["stream"]) for r in (first, second)} == {
        ("openai/gpt-4o-mini", second["economy_id"], None, stream)
    }


def test_anthropic_overloaded_529_moves_on_to_the_aliases_fallback(caller: Caller) -> None:
    overloaded = key("overloaded")
    caller.add_key("anthropic", overloaded)
    caller.add_key("gemini", key())
    raw = caller.chat("claude")
    assert raw.headers["x-switchboard-model"] == "gemini/gemini-2.0-flash"
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert caller.tried(overloaded) == 1


def test_a_fallback_keyed_by_alias_does_not_apply_to_the_model_named_directly(caller: Caller) -> None:
    caller.add_key("anthropic", key("down"))
    caller.add_key("gemini", key())
    with pytest.raises(openai.APIStatusError) as raised:
        caller.chat(HAIKU)
    assert raised.value.status_code == 502
    assert raised.value.response.headers["x-switchboard-attempts"] == "1"


def test_every_key_rate_limited_answers_429_with_the_smallest_retry_after(caller: Caller) -> None:
    caller.add_key("openai", key("busy-7"))
    caller.add_key("openai", key("busy-3"))
    caller.add_key("anthropic", key("busy-5"))
    with pytest.raises(openai.RateLimitError) as raised:
        caller.chat()
    headers = raised.value.response.headers
    assert (headers["retry-after"], headers["x-switchboard-attempts"]) == ("3", "3")
    records = caller.records(headers["x-request-id"])
    assert [(r["attempt"], r["status"], r["error_code"]) for r in records] == [
        (n, "error", "RATE_LIMITED") for n in (1, 2, 3)
    ]


def test_a_provider_5xx_last_is_502_even_after_a_429(caller: Caller) -> None:
    caller.add_key("openai", key("busy-9"))
    caller.add_key("anthropic", key("down"))
    with pytest.raises(openai.InternalServerError) as raised:
        caller.chat()
    assert raised.value.status_code == 502
    assert raised.value.response.headers["x-switchboard-attempts"] == "2"


def test_a_rejected_key_last_is_424(caller: Caller) -> None:
    caller.add_key("openai", key("down"))
    caller.add_key("anthropic", key("reject"))
    with pytest.raises(openai.APIStatusError) as raised:
        caller.chat()
    assert raised.value.status_code == 424
    assert raised.value.body["code"] == "upstream_credential_rejected"  # type: ignore[index]


def test_request_models_are_tried_in_order_and_model_may_be_omitted(caller: Caller) -> None:
    caller.add_key("openai", key("down"))
    caller.add_key("gemini", key())
    response = caller.post({"models": ["openai/gpt-4o-mini", "tag:google"]})
    assert response.status_code == 200, response.text
    assert response.headers["x-switchboard-model"] == "gemini/gemini-2.0-flash"
    # The catalog's fallback of gpt-4o-mini (anthropic) comes after the request's list; no key for it.
    assert response.headers["x-switchboard-attempts"] == "2"
    records = caller.records(response.headers["x-request-id"])
    assert [r["selector"] for r in records] == ["openai/gpt-4o-mini"] * 2


def test_models_and_provider_never_reach_the_provider(caller: Caller, fake_provider: Any) -> None:
    secret = key()
    caller.add_key("openai", secret)
    response = caller.post(
        {"model": "fast", "models": ["tag:cheap"], "provider": {"order": ["openai"], "allow_fallbacks": True}}
    )
    assert response.status_code == 200, response.text
    [seen] = [r for r in fake_provider.received() if r.api_key == secret]
    assert "models" not in seen.body and "provider" not in seen.body


def test_provider_order_puts_a_provider_first(caller: Caller) -> None:
    caller.add_key("openai", key())
    caller.add_key("anthropic", key())
    response = caller.post({"model": "default", "provider": {"order": ["anthropic"]}})
    assert response.headers["x-switchboard-model"] == HAIKU


def test_provider_only_and_ignore_filter_the_candidates(caller: Caller) -> None:
    caller.add_key("openai", key())
    caller.add_key("anthropic", key())
    only = caller.post({"model": "default", "provider": {"only": ["anthropic"]}})
    assert only.headers["x-switchboard-model"] == HAIKU
    ignored = caller.post({"model": "default", "provider": {"ignore": ["openai"]}})
    assert ignored.headers["x-switchboard-model"] == HAIKU
    nothing = caller.post({"model": "default", "provider": {"only": ["gemini"]}})
    assert nothing.status_code == 404
    assert nothing.json()["error"]["code"] == "model_not_found"


def test_allow_fallbacks_false_uses_only_the_first_provider(caller: Caller) -> None:
    down = key("down")
    caller.add_key("openai", down)
    anthropic = key()
    caller.add_key("anthropic", anthropic)
    response = caller.post({"model": "default", "provider": {"allow_fallbacks": False}})
    assert response.status_code == 502
    assert response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(anthropic) == 0


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"models": "openai/gpt-4o-mini"}, "models"),
        ({"models": []}, "models"),
        ({"models": ["agent:abc"]}, "models"),
        ({"models": [7]}, "models"),
        ({"provider": ["openai"]}, "provider"),
        ({"provider": {"order": ["no-such-kind"]}}, "provider"),
        ({"provider": {"sort": "price"}}, "provider"),
        ({"provider": {"allow_fallbacks": "no"}}, "provider"),
    ],
)
def test_malformed_routing_fields_are_400(caller: Caller, body: dict[str, Any], param: str) -> None:
    caller.add_key("openai", key())
    response = caller.post({"model": "fast", **body})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
