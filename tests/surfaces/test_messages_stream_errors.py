"""A provider `error` event inside a relayed Anthropic stream (SPEC §16, §8): the client gets the
provider's event as it came, once, and the call's usage record says the failure, with the code the
gateway's own Anthropic adapter records for the same event."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.anthropic_wire import error_event, message, stream_of, text
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import (
    credentialed_user,
    records_of_model,
    unique_model,
)
from tests.support.gateway import Gateway, User
from tests.support.sdks import anthropic_client, openai_client

HI = [{"role": "user", "content": "hi"}]
OVERLOADED = error_event("overloaded_error", "Overloaded")


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(default_test_config(fake_provider.base_url))


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed_user(gateway, fake_provider, ("anthropic",))


def script_broken_stream(fake_provider: FakeProvider, model: str) -> None:
    """message_start, a text block's start and a ping, one delta, then Anthropic's error event."""
    fake_provider.script(model, answer_events=[*stream_of(message([text("Hel")]))[:4], OVERLOADED])


def test_an_error_event_in_a_relayed_stream_reaches_the_client_once_and_is_recorded_as_the_failure(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    relayed, adapted = unique_model("relayed"), unique_model("adapted")
    script_broken_stream(fake_provider, relayed)
    script_broken_stream(fake_provider, adapted)

    sdk = anthropic_client(gateway, user)
    texts: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as raised,
        sdk.messages.stream(model=f"anthropic/{relayed}", max_tokens=20, messages=HI) as stream,
    ):
        texts.extend(stream.text_stream)
    sdk.close()
    assert texts == ["Hel"]
    assert "Overloaded" in str(raised.value)
    # Byte for byte, the provider's error event is the stream's last, and there is only one.
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        json={"model": f"anthropic/{relayed}", "max_tokens": 20, "messages": HI, "stream": True},
        headers={"x-api-key": user.token},
    ) as response:
        raw = response.read()
    assert raw.endswith(OVERLOADED) and raw.count(b"event: error") == 1
    assert b"message_stop" not in raw

    # The same event through the gateway's Anthropic adapter (an OpenAI chat stream of the call).
    chat = openai_client(gateway, user)
    with pytest.raises(openai.APIError):
        list(chat.chat.completions.create(model=f"anthropic/{adapted}", messages=HI, stream=True))  # type: ignore[arg-type]
    chat.close()

    first, second = records_of_model(user, relayed, count=2)
    [reference] = records_of_model(user, adapted)
    assert reference["status"] == "error" and reference["error_code"]
    for record in (first, second):
        assert (record["status"], record["endpoint"], record["stream"]) == ("error", "messages", True)
        assert record["error_code"] == reference["error_code"]


@pytest.mark.parametrize(
    ("where", "event"),
    [
        ("typed, mid-stream", OVERLOADED),
        (
            "named error, no type",
            b'event: error\ndata: {"error": {"type": "overloaded_error", "message": "Busy"}}\n\n',
        ),
        ("named error, not JSON", b"event: error\ndata: Internal server error\n\n"),
        (
            "no space after the colons",
            b'event:error\ndata:{"type":"error","error":{"type":"api_error","message":"x"}}\n\n',
        ),
    ],
)
@pytest.mark.parametrize("after", ["a delta", "message_delta"])
def test_every_form_of_a_provider_error_event_in_a_relayed_stream_is_recorded_as_an_error(
    gateway: Gateway, user: User, fake_provider: FakeProvider, where: str, event: bytes, after: str
) -> None:
    model = unique_model("relayed")
    events = stream_of(message([text("Hel")]))
    head = events[:4] if after == "a delta" else events[:-1]  # all but message_stop
    fake_provider.script(model, answer_events=[*head, event])
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        json={"model": f"anthropic/{model}", "max_tokens": 20, "messages": HI, "stream": True},
        headers={"x-api-key": user.token},
    ) as response:
        raw = response.read()
    assert raw.endswith(event) and b"message_stop" not in raw, where
    [record] = records_of_model(user, model)
    assert (record["status"], record["stream"]) == ("error", True), where
    assert record["error_code"], where
