"""A call that takes several attempts is still one call to the ledger (SPEC §13, §14): its limits are
held and settled once, an idempotent replay returns its final answer, and summaries count records."""

from __future__ import annotations

import uuid
from typing import Any

import openai
import pytest

from tests.routing.conftest import Caller, key
from tests.support.gateway import Gateway
from tests.support.sdks import openai_client


def test_an_idempotent_replay_returns_the_final_answer_without_another_attempt(
    caller: Caller, fake_provider: Any
) -> None:
    caller.add_key("openai", key("down"))
    anthropic = key()
    caller.add_key("anthropic", anthropic)
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    first = caller.post({"model": "openai/gpt-4o-mini"}, **headers)
    assert first.status_code == 200, first.text
    asked = len(fake_provider.received())
    replay = caller.post({"model": "openai/gpt-4o-mini"}, **headers)
    assert replay.status_code == 200
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.content == first.content
    for name in ("x-switchboard-model", "x-switchboard-credential", "x-switchboard-attempts"):
        assert replay.headers[name] == first.headers[name]
    assert replay.headers["x-switchboard-attempts"] == "2"
    assert len(fake_provider.received()) == asked  # no provider was asked again
    assert len(caller.records(first.headers["x-request-id"])) == 2
    assert caller.records(replay.headers["x-request-id"]) == []


def test_limits_hold_and_settle_a_call_once_whatever_its_attempts(
    caller: Caller, routing_gateway: Gateway
) -> None:
    admin = routing_gateway.user(role="Admin")
    limits = {}
    for metric in ("requests", "tokens"):
        response = admin.client.post(
            "/limits",
            json={
                "subject_type": "user",
                "subject_id": str(caller.user.id),
                "metric": metric,
                "window": "day",
                "amount": "1000",
            },
        )
        assert response.status_code == 201, response.text
        limits[metric] = response.json()["id"]
    caller.add_key("openai", key("down"))
    caller.add_key("anthropic", key())
    raw = caller.chat()
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert raw.headers["x-ratelimit-remaining-requests"] == "999"
    answered = caller.records(raw.headers["x-request-id"])[-1]
    used = {
        metric: admin.client.get(f"/limits/{limit_id}/status").json() for metric, limit_id in limits.items()
    }
    assert (used["requests"]["used"], used["requests"]["reserved"]) == ("1", "0")
    tokens = answered["prompt_tokens"] + answered["completion_tokens"]
    assert (used["tokens"]["used"], used["tokens"]["reserved"]) == (str(tokens), "0")


def test_a_summary_counts_each_attempt_as_a_request(caller: Caller, routing_gateway: Gateway) -> None:
    admin = routing_gateway.user(role="Admin")
    slug = f"routing-{uuid.uuid4().hex[:10]}"
    assert admin.client.post("/economies", json={"slug": slug, "name": slug}).status_code == 201
    joined = admin.client.post(f"/economies/{slug}/participants", json={"user_id": str(caller.user.id)})
    assert joined.status_code in (200, 201), joined.text
    caller.add_key("openai", key("down"))
    caller.add_key("anthropic", key())
    response = caller.post({"model": "openai/gpt-4o-mini"}, **{"X-Economy-Id": slug})
    assert response.headers["x-switchboard-attempts"] == "2"
    summary = admin.client.get(f"/economies/{slug}/usage/summary", params={"group_by": "model"})
    assert summary.status_code == 200, summary.text
    assert summary.json()["totals"]["requests"] == 2


def _cost_limit(routing_gateway: Gateway, caller: Caller, amount: int) -> str:
    admin = routing_gateway.user(role="Admin")
    body = {
        "subject_type": "user",
        "subject_id": str(caller.user.id),
        "metric": "cost",
        "window": "day",
        "amount": str(amount),
    }
    response = admin.client.post("/limits", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _held(raw: Any, amount: int) -> int:
    """What a caller's first call held against a fresh cost limit: the budget it says is left is the
    amount less the call's hold."""
    return amount - int(raw.headers["x-switchboard-budget-remaining"])


def _new_caller(routing_gateway: Gateway, fake_provider: Any) -> Caller:
    user = routing_gateway.user()
    sdk = openai_client(routing_gateway, user)
    return Caller(user=user, sdk=sdk, fake_provider=fake_provider)


AMPLE = 10**12  # nano-units: a budget no call here comes near


def test_a_call_that_may_fall_back_holds_its_pricier_fallbacks_worst_case(
    caller: Caller, routing_gateway: Gateway, fake_provider: Any
) -> None:
    # Two callers with the same request under the same budget: one with only an openai key (gpt-4o-mini
    # is its one route), one that may also fall back to claude-3-5-haiku (about seven times the price).
    alone = _new_caller(routing_gateway, fake_provider)
    alone.add_key("openai", key())
    _cost_limit(routing_gateway, alone, AMPLE)
    caller.add_key("openai", key())
    caller.add_key("anthropic", key())
    _cost_limit(routing_gateway, caller, AMPLE)

    mini_only = _held(alone.chat(max_tokens=1000), AMPLE)
    may_fall_back = caller.chat(max_tokens=1000)
    assert may_fall_back.headers["x-switchboard-attempts"] == "1"  # answered by gpt-4o-mini
    held = _held(may_fall_back, AMPLE)
    assert held > 5 * mini_only

    # What it held is what the same request held when claude-3-5-haiku was its only model.
    haiku = _new_caller(routing_gateway, fake_provider)
    haiku.add_key("anthropic", key())
    _cost_limit(routing_gateway, haiku, AMPLE)
    assert _held(haiku.chat("anthropic/claude-3-5-haiku-latest", max_tokens=1000), AMPLE) == held
    alone.sdk.close()
    haiku.sdk.close()


def test_a_fallback_whose_worst_case_does_not_fit_the_budget_is_left_out(
    caller: Caller, routing_gateway: Gateway, fake_provider: Any
) -> None:
    probe = _new_caller(routing_gateway, fake_provider)
    probe.add_key("openai", key())
    _cost_limit(routing_gateway, probe, AMPLE)
    mini_worst = _held(probe.chat(max_tokens=1000), AMPLE)
    probe.sdk.close()

    # Room for gpt-4o-mini's worst case, not for claude-3-5-haiku's: the fallback would overspend.
    limit_id = _cost_limit(routing_gateway, caller, mini_worst + 1)
    caller.add_key("openai", key("down"))
    anthropic = key()
    caller.add_key("anthropic", anthropic)
    with pytest.raises(openai.InternalServerError) as raised:
        caller.chat(max_tokens=1000)
    assert raised.value.status_code == 502
    assert raised.value.response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(anthropic) == 0
    admin = routing_gateway.user(role="Admin")
    standing = admin.client.get(f"/limits/{limit_id}/status").json()
    assert (standing["used"], standing["reserved"]) == ("0", "0")  # the failed attempt cost nothing


def test_a_fallback_that_fits_stays_in_the_plan_and_answers(
    caller: Caller, routing_gateway: Gateway, fake_provider: Any
) -> None:
    limit_id = _cost_limit(routing_gateway, caller, AMPLE)
    caller.add_key("openai", key("down"))
    anthropic = key()
    caller.add_key("anthropic", anthropic)
    raw = caller.chat(max_tokens=1000)
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert caller.tried(anthropic) == 1
    admin = routing_gateway.user(role="Admin")
    standing = admin.client.get(f"/limits/{limit_id}/status").json()
    answered = caller.records(raw.headers["x-request-id"])[-1]
    assert standing["used"] == answered["cost"]
    assert standing["reserved"] == "0"


def test_the_cap_a_budget_set_is_brought_within_a_fallback_model_that_answers_less(
    caller: Caller, routing_gateway: Gateway
) -> None:
    # claude-sonnet-4-5 ($3/$15, up to 64,000 tokens) first, gpt-4o-mini (up to 16,384) as fallback. The
    # budget affords sonnet about 20,000 tokens, a cap gpt-4o-mini's provider would refuse (400).
    _cost_limit(routing_gateway, caller, 20_000 * 15_000 + 1_000 * 3_000)
    caller.add_key("anthropic", key("down"))
    openai_key = key()
    caller.add_key("openai", openai_key)
    models = ["anthropic/claude-sonnet-4-5", "openai/gpt-4o-mini"]
    raw = caller.chat("anthropic/claude-sonnet-4-5", extra_body={"models": models})
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert 20_000 <= int(raw.headers["x-switchboard-max-tokens"]) < 20_200
    [sent] = [r.body for r in caller.fake_provider.received() if r.api_key == openai_key]
    assert sent["max_completion_tokens"] == 16_384
