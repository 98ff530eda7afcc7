"""A call that takes several attempts is still one call to the ledger (SPEC §13, §14): its limits are
held and settled once, an idempotent replay returns its final answer, and summaries count records."""

from __future__ import annotations

import uuid
from typing import Any

from tests.routing.conftest import Caller, key
from tests.support.gateway import Gateway


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
