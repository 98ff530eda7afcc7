"""Limits stop calls before the provider is called, cap answers to what a budget has left, and settle
each call's hold into its actual usage (SPEC §13), over HTTP with the openai SDK."""

from __future__ import annotations

import socket
import time
import uuid
from datetime import timedelta
from typing import Any

import openai
import orjson
import pytest
from sqlalchemy import select, update

from switchboard.limits.models import LimitUsageRow
from tests.llm.conftest import Caller, make_caller, unique_model
from tests.support.gateway import Gateway, User

MESSAGES = [{"role": "user", "content": "Hello there, how are you?"}]
# Per token: 150 nano-units in, 600 out (0.15 and 0.60 per million).
PRICES = {"input_per_mtok": "0.15", "output_per_mtok": "0.60"}


def add_limit(admin: User, **limit: Any) -> dict[str, Any]:
    response = admin.client.post("/limits", json=limit)
    assert response.status_code == 201, response.text
    return dict(response.json())


def status(admin: User, limit_id: str) -> dict[str, Any]:
    response = admin.client.get(f"/limits/{limit_id}/status")
    assert response.status_code == 200, response.text
    return dict(response.json())


def economy_for(admin: User, caller: Caller, model: str, **extra: Any) -> str:
    """A fresh economy pricing `model`, with the caller in it; returns its slug."""
    slug = f"lim-{uuid.uuid4().hex[:10]}"
    created = admin.client.post(
        "/economies",
        json={"slug": slug, "name": slug, "price_overrides": {f"openai/{model}": PRICES}, **extra},
    )
    assert created.status_code == 201, created.text
    joined = admin.client.post(
        f"/economies/{slug}/participants", json={"user_id": str(caller.user.id), "role": "member"}
    )
    assert joined.status_code in (200, 201), joined.text
    return slug


def sdk_for(caller: Caller, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=str(caller.sdk.base_url), api_key=caller.user.token, max_retries=0, default_headers=headers
    )


@pytest.fixture
def admin(gateway: Gateway) -> User:
    return gateway.user(role="Admin")


@pytest.fixture
def caller(gateway: Gateway, fake_provider: Any) -> Caller:
    return make_caller(gateway, fake_provider, ("openai",))


def test_a_requests_per_minute_limit_answers_429_with_retry_after_and_never_reaches_the_provider(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("rpm")
    add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="requests",
        window="minute",
        amount="2",
    )
    seen = []
    for _ in range(2):
        raw = caller.sdk.chat.completions.with_raw_response.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
        seen.append(raw.headers)
    assert [h["x-ratelimit-limit-requests"] for h in seen] == ["2", "2"]
    assert [h["x-ratelimit-remaining-requests"] for h in seen] == ["1", "0"]
    assert seen[1]["x-ratelimit-reset-requests"].endswith("s")
    with pytest.raises(openai.RateLimitError) as refused:
        caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    error = refused.value
    assert error.code == "rate_limit_exceeded"
    assert 1 <= int(error.response.headers["retry-after"]) <= 60
    # The refusal carries OpenAI's rate-limit headers too (SPEC §13), as OpenAI's own 429s do.
    assert error.response.headers["x-ratelimit-limit-requests"] == "2"
    assert error.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert error.response.headers["x-ratelimit-reset-requests"].endswith("s")
    assert len(fake_provider.received(model)) == 2


def backdate_counter(gateway: Gateway, limit_id: str, seconds: float) -> None:
    """As if the limit's last call had settled `seconds` earlier (its bucket's refill since then)."""

    async def run() -> None:
        usage = LimitUsageRow.__table__
        async with gateway.app.state.sessionmaker() as session, session.begin():
            row = (await session.execute(select(usage).where(usage.c.limit_id == uuid.UUID(limit_id)))).one()
            await session.execute(
                update(usage)
                .where(usage.c.limit_id == row.limit_id)
                .values(updated_at=row.updated_at - timedelta(seconds=seconds))
            )

    gateway.server.call_soon(run())


def test_a_rolling_bucket_refills_before_a_settlement_adds_to_it(
    gateway: Gateway, caller: Caller, admin: User
) -> None:
    model = unique_model("refill")
    # 60 an hour: one a minute flows back, so a busy machine's seconds change nothing below.
    limit = add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="requests",
        window="hour",
        amount="60",
    )
    for _ in range(3):
        caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert status(admin, limit["id"])["used"] == "3"
    backdate_counter(gateway, limit["id"], 150)  # two and a half minutes: two calls flowed back
    assert status(admin, limit["id"])["used"] == "1"
    caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    # Settled as 1 (what was left) + 1, not 3 + 1: the refill is kept.
    assert status(admin, limit["id"])["used"] == "2"


def test_a_cost_limit_sets_the_output_cap_the_budget_affords_and_says_so(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("cap")
    slug = economy_for(admin, caller, model)
    economy_id = admin.client.get(f"/economies/{slug}").json()["id"]
    # The prompt's bound: 82 tokens (its 42 bytes, 8 a message, 32 a request) → 12,300 nano-units;
    # 100,000 leaves room for 146 output tokens.
    limit = add_limit(
        admin, subject_type="economy", subject_id=slug, metric="cost", window="month", amount="100000"
    )
    assert limit["subject_id"] == economy_id
    sdk = sdk_for(caller, **{"X-Economy-Id": slug})
    raw = sdk.chat.completions.with_raw_response.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    cap = int(raw.headers["x-switchboard-max-tokens"])
    assert 100 < cap < 170
    [sent] = fake_provider.received(model)
    assert sent.body["max_completion_tokens"] == cap
    remaining = int(raw.headers["x-switchboard-budget-remaining"])
    assert 0 <= remaining < 100000
    # Settled: the hold is gone and `used` is the record's cost (11 in, 7 out by the fake provider).
    after = status(admin, limit["id"])
    assert after["reserved"] == "0"
    assert after["used"] == str(11 * 150 + 7 * 600)
    assert int(after["remaining"]) == 100000 - (11 * 150 + 7 * 600)


def test_a_spent_cost_limit_answers_402_budget_exceeded_naming_the_limit(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("spent")
    slug = economy_for(admin, caller, model)
    limit = add_limit(
        admin, subject_type="economy", subject_id=slug, metric="cost", window="day", amount="500"
    )
    sdk = sdk_for(caller, **{"X-Economy-Id": slug})
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert refused.value.status_code == 402
    body = refused.value.response.json()["error"]
    assert (body["type"], body["code"], body["limit_id"]) == (
        "insufficient_quota",
        "budget_exceeded",
        limit["id"],
    )
    assert body["resets_at"].endswith("T00:00:00+00:00")
    assert fake_provider.received(model) == []
    assert status(admin, limit["id"])["reserved"] == "0"


def test_a_callers_own_cap_is_never_lowered_when_it_does_not_fit(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("own")
    slug = economy_for(admin, caller, model)
    add_limit(admin, subject_type="economy", subject_id=slug, metric="cost", window="month", amount="100000")
    sdk = sdk_for(caller, **{"X-Economy-Id": slug})
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES, max_tokens=1000)  # type: ignore[arg-type]
    assert refused.value.status_code == 402
    raw = sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}", messages=MESSAGES, max_tokens=50
    )  # type: ignore[arg-type]
    assert "x-switchboard-max-tokens" not in raw.headers
    [sent] = fake_provider.received(model)
    assert sent.body["max_tokens"] == 50 and "max_completion_tokens" not in sent.body


def test_an_unpriced_model_under_a_cost_limit_is_refused_unless_the_limit_allows_it(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("unpriced")  # no price anywhere: not in the catalog, litellm or an override
    limit = add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="cost",
        window="month",
        amount="1000000",
    )
    with pytest.raises(openai.APIStatusError) as refused:
        caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert refused.value.status_code == 402
    assert refused.value.response.json()["error"]["code"] == "unpriced_model"
    assert fake_provider.received(model) == []
    changed = admin.client.patch(f"/limits/{limit['id']}", json={"allow_unpriced": True})
    assert changed.status_code == 200, changed.text
    answer = caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert answer.choices[0].message.content


def test_a_tokens_limit_counts_prompt_and_answer_and_answers_429(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("tpm")
    limit = add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="tokens",
        window="day",
        amount="150",
    )
    # The first call holds its prompt's bound (82) and an answer of the rest; the second, capped at
    # 100 tokens, would hold 182 of the 132 left.
    raw = caller.sdk.chat.completions.with_raw_response.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert raw.headers["x-ratelimit-limit-tokens"] == "150"
    assert status(admin, limit["id"])["used"] == "18"  # 11 + 7, as the provider counted them
    with pytest.raises(openai.RateLimitError) as refused:
        caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES, max_tokens=100)  # type: ignore[arg-type]
    headers = refused.value.response.headers
    # What is left without the refused call: 150 - 18.
    assert (headers["x-ratelimit-limit-tokens"], headers["x-ratelimit-remaining-tokens"]) == ("150", "132")
    assert headers["x-ratelimit-reset-tokens"].endswith("s") and int(headers["retry-after"]) >= 1
    assert "x-switchboard-budget-remaining" not in headers
    assert len(fake_provider.received(model)) == 1


def test_a_stream_holds_until_done_then_settles(caller: Caller, admin: User, fake_provider: Any) -> None:
    model = unique_model("stream")
    slug = economy_for(admin, caller, model)
    limit = add_limit(
        admin, subject_type="economy", subject_id=slug, metric="cost", window="total", amount="900000"
    )
    sdk = sdk_for(caller, **{"X-Economy-Id": slug})
    fake_provider.script(model, reply="one two three four", chunk_delay=0.2)
    with sdk.chat.completions.with_streaming_response.create(
        model=f"openai/{model}", messages=MESSAGES, stream=True
    ) as response:
        assert int(response.headers["x-switchboard-budget-remaining"]) < 900000
        lines = response.iter_lines()
        next(lines)
        assert int(status(admin, limit["id"])["reserved"]) > 0  # held while the answer streams
        rest = list(lines)
    assert "data: [DONE]" in rest
    after = status(admin, limit["id"])
    assert after["reserved"] == "0" and after["used"] == str(11 * 150 + 7 * 600)


def test_a_limit_narrowed_to_another_economy_does_not_apply(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("narrow")
    slug = economy_for(admin, caller, model)
    add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        economy_id=slug,
        metric="requests",
        window="minute",
        amount="0",
    )
    answer = caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert answer.choices
    with pytest.raises(openai.RateLimitError):
        sdk_for(caller, **{"X-Economy-Id": slug}).chat.completions.create(
            model=f"openai/{model}",
            messages=MESSAGES,  # type: ignore[arg-type]
        )


def test_an_api_key_limit_applies_to_calls_made_with_that_key(
    gateway: Gateway, caller: Caller, admin: User, fake_provider: Any
) -> None:
    issued = caller.user.client.post("/auth/api-key/generate", json={"service_name": "limited"})
    assert issued.status_code == 201, issued.text
    key, key_id = issued.json()["api_key"], issued.json()["id"]
    add_limit(admin, subject_type="api_key", subject_id=key_id, metric="requests", window="hour", amount="1")
    model = unique_model("key")
    keyed = openai.OpenAI(base_url=str(caller.sdk.base_url), api_key=key, max_retries=0)
    keyed.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    with pytest.raises(openai.RateLimitError):
        keyed.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    # The same user with a token is not that key.
    caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    records = caller.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    assert sum(1 for r in records if r["model"] == model) == 2


def test_an_idempotent_replay_under_a_spent_limit_returns_the_stored_answer(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("replay")
    limit = add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="requests",
        window="day",
        amount="1",
    )
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    first = caller.sdk.chat.completions.create(
        model=f"openai/{model}", messages=MESSAGES, extra_headers=headers
    )  # type: ignore[arg-type]
    again = caller.sdk.chat.completions.create(
        model=f"openai/{model}", messages=MESSAGES, extra_headers=headers
    )  # type: ignore[arg-type]
    assert again.id == first.id
    assert len(fake_provider.received(model)) == 1
    assert status(admin, limit["id"])["used"] == "1"


def test_a_new_limit_applies_to_the_next_call(caller: Caller, admin: User, fake_provider: Any) -> None:
    model = unique_model("next")
    caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    limit = add_limit(
        admin,
        subject_type="user",
        subject_id=str(caller.user.id),
        metric="requests",
        window="day",
        amount="1",
    )
    # `used` starts from the records already in the window.
    assert status(admin, limit["id"])["used"] == "1"
    with pytest.raises(openai.RateLimitError) as refused:
        caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    assert refused.value.response.headers["retry-after"]
    deleted = admin.client.delete(f"/limits/{limit['id']}")
    assert deleted.status_code == 204
    caller.sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]


def test_a_client_that_leaves_frees_its_reservation_within_five_seconds(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    model = unique_model("leave")
    slug = economy_for(admin, caller, model)
    limit = add_limit(
        admin, subject_type="economy", subject_id=slug, metric="cost", window="total", amount="900000"
    )
    fake_provider.script(model, held=True)  # the provider never answers while the client waits
    payload = orjson.dumps({"model": f"openai/{model}", "messages": MESSAGES, "stream": True})
    host, port = str(caller.sdk.base_url).removeprefix("http://").split("/")[0].split(":")
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {caller.user.token}\r\n"
        f"x-economy-id: {slug}\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head.encode() + payload)
        deadline = time.monotonic() + 10
        while not fake_provider.received(model):
            assert time.monotonic() < deadline, "the call never reached the provider"
            time.sleep(0.02)
        assert int(status(admin, limit["id"])["reserved"]) > 0
    left = time.monotonic()  # the client hung up without an answer
    while status(admin, limit["id"])["reserved"] != "0":
        assert time.monotonic() - left < 5, "the reservation outlived the client by 5 s"
        time.sleep(0.05)
    fake_provider.release(model)


def test_a_cost_limit_reserves_the_uncached_worst_case_and_settles_the_records_class_priced_cost(
    caller: Caller, admin: User, fake_provider: Any
) -> None:
    """SPEC §20: the reservation prices every input token uncached and the answer at the dearer of the
    output and reasoning prices (the cap it sets follows the same formula); the settlement is the
    record's cost, its cache reads and reasoning priced as such."""
    model = unique_model("classes")
    prices = {
        "input_per_mtok": "0.15",
        "cache_read_per_mtok": "0.075",
        "output_per_mtok": "0.60",
        "reasoning_per_mtok": "1.20",
    }
    slug = economy_for(admin, caller, model, price_overrides={f"openai/{model}": prices})
    limit = add_limit(
        admin, subject_type="economy", subject_id=slug, metric="cost", window="month", amount="100000"
    )
    fake_provider.enqueue(model, prompt_tokens=11, cached_tokens=6, completion_tokens=7, reasoning_tokens=3)
    sdk = sdk_for(caller, **{"X-Economy-Id": slug})
    raw = sdk.chat.completions.with_raw_response.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
    # The prompt's upper bound (82 tokens for MESSAGES, as the tokens-limit test holds) uncached at 150
    # a token; the rest at 1,200 a token (reasoning), not 600.
    cap = int(raw.headers["x-switchboard-max-tokens"])
    assert cap == (100_000 - 82 * 150) // 1200
    cost = 5 * 150 + 6 * 75 + 4 * 600 + 3 * 1200
    [record] = [r for r in caller.user.client.get("/usage/me").json()["data"] if r["model"] == model]
    assert record["cost"] == str(cost)
    after = status(admin, limit["id"])
    assert (after["reserved"], after["used"]) == ("0", str(cost))
