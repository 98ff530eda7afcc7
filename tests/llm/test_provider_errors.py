"""Provider failures reach clients as the statuses SPEC §3 and §5 promise, without secrets."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest

from tests.llm.conftest import Caller, unique_model


def chat(caller: Caller, model: str, **kwargs: Any) -> Any:
    return caller.user.client.post(
        "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "x"}], **kwargs},
    )


def test_a_provider_429_passes_through_with_retry_after(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, fail="rate_limit", retry_after="13")
    response = chat(caller, f"openai/{model}")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "13"
    with pytest.raises(openai.RateLimitError):
        caller.sdk.chat.completions.create(
            model=f"openai/{model}", messages=[{"role": "user", "content": "x"}]
        )


@pytest.mark.parametrize(
    ("provider", "failure"),
    [
        ("openai", "unauthorized"),
        ("openai", "forbidden"),
        ("anthropic", "invalid_key"),
        ("gemini", "invalid_key"),
    ],
)
def test_a_rejected_stored_key_is_424_not_401(
    caller: Caller, fake_provider: Any, provider: str, failure: str
) -> None:
    model = unique_model(provider)
    fake_provider.script(model, fail=failure)
    response = chat(caller, f"{provider}/{model}")
    assert response.status_code == 424
    assert response.json()["error"]["code"] == "upstream_credential_rejected"


def test_a_provider_5xx_is_502(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, fail="server_error")
    assert chat(caller, f"openai/{model}").status_code == 502


def test_a_provider_400_passes_through_scrubbed_of_the_key(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, fail="echo_key")
    response = chat(caller, f"openai/{model}")
    assert response.status_code == 400
    assert caller.keys["openai"] not in response.text
    with pytest.raises(openai.BadRequestError):
        caller.sdk.chat.completions.create(
            model=f"openai/{model}", messages=[{"role": "user", "content": "x"}]
        )


def test_a_failure_before_the_first_chunk_is_a_plain_json_error(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, fail="rate_limit")
    response = chat(caller, f"openai/{model}", stream=True)
    assert response.status_code == 429
    assert response.headers["content-type"].startswith("application/json")


def test_a_stream_that_breaks_ends_with_one_openai_error_event(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, reply="a b c d e f", break_after=2)
    with caller.user.client.stream(
        "POST",
        "/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ) as response:
        assert response.status_code == 200
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert '"error"' in events[-1]
    assert "[DONE]" not in "".join(events)


def test_a_client_that_goes_away_cancels_the_provider_call_within_a_second(
    caller: Caller, fake_provider: Any
) -> None:
    model = unique_model()
    fake_provider.script(model, endless=True, chunk_delay=0.05)
    with caller.user.client.stream(
        "POST",
        "/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
        left_at = time.monotonic()
    disconnect = fake_provider.wait_disconnect_sync(model, timeout=3.0)
    assert disconnect is not None
    assert time.monotonic() - left_at < 1.5


def test_a_client_that_leaves_while_the_provider_is_silent_still_cancels_it(
    caller: Caller, fake_provider: Any
) -> None:
    model = unique_model()
    fake_provider.script(model, stall_after=1)
    with caller.user.client.stream(
        "POST",
        "/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ) as response:
        assert next(line for line in response.iter_lines() if line.startswith("data: "))
    assert fake_provider.wait_disconnect_sync(model, timeout=1.5) is not None
