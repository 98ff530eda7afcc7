"""A `model` no provider could serve (control characters, non-Latin-1) is refused before any provider call."""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm.conftest import Caller

UNUSABLE = [
    "gpt\x00mini",
    "gpt\r\nX-Injected: 1",
    "gpt\nmini",
    "gpt\x07",
    "gpt\x7f",
    "gpt\x85",
    "模型",
    "gpt-😀",
]


@pytest.mark.parametrize("model", UNUSABLE)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("prefix", ["openai/", ""])
def test_an_unusable_model_name_is_a_400_before_any_provider_request(
    caller: Caller, fake_provider: Any, model: str, stream: bool, prefix: str
) -> None:
    before = len(fake_provider.requests)
    response = caller.user.client.post(
        "/v1/chat/completions",
        json={"model": prefix + model, "messages": [{"role": "user", "content": "hi"}], "stream": stream},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["param"] == "model" and error["type"] == "invalid_request_error"
    assert "control character" in error["message"]
    assert len(fake_provider.requests) == before


def test_a_latin_1_model_name_is_still_a_name(caller: Caller) -> None:
    response = caller.user.client.post(
        "/v1/chat/completions", json={"model": "café-model", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
