"""Bad credential input is a clear 4xx in the flat shape, never echoes the secret, and stores nothing."""

from __future__ import annotations

import uuid

import pytest

from tests.credentials.factories import fresh_secret, listed_ids
from tests.groups.factories import room_cast
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER


def _refused(gateway: Gateway, body: object, status: int = 400) -> dict[str, object]:
    user = gateway.user()
    response = user.client.post("/llm-credentials", json=body)
    assert response.status_code == status, response.text
    payload: dict[str, object] = response.json()
    assert set(payload) <= {"error", "code", "details"} and isinstance(payload["error"], str)
    assert listed_ids(user) == []
    return payload


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider": "acme-ai"}, "provider"),  # azure, mistral, … are kinds (SPEC §15)
        ({"provider": None}, "provider"),
        ({"provider": 1}, "provider"),
        ({"secret": ""}, "secret"),
        ({"secret": "   \t\n"}, "secret"),
        ({"secret": "sk-" + "a" * 4094}, "secret"),
        ({"secret": "sk-has space-inside-1234"}, "secret"),
        ({"secret": "sk-line\r\nX-Injected: 1"}, "secret"),
        ({"secret": "sk-ünïcode-12345678"}, "secret"),
        ({"secret": 12345678901234}, "secret"),
        ({"secret": None}, "secret"),
        ({"label": 7}, "label"),
        ({"label": "x" * 201}, "label"),
        ({"base_url": 443}, "base_url"),
        ({"scope": "team"}, "scope"),
        ({"scope": "room"}, "body"),
        ({"scope": "user", "room_id": str(uuid.uuid4())}, "body"),
        ({"room_id": "room-one"}, "room_id"),
        ({"api_key": "sk-x"}, "api_key"),
    ],
)
def test_malformed_credentials_are_a_400_naming_the_field(
    gateway: Gateway, body: dict[str, object], field: str
) -> None:
    full = {"provider": "openai", "secret": fresh_secret(), **body}
    if "secret" in body and isinstance(body["secret"], str) and body["secret"].strip():
        RECORDER.remember_secret(body["secret"])
    payload = _refused(gateway, full)
    assert payload["code"] == "VALIDATION_FAILED"
    fields = {problem["field"] for problem in payload["details"]}  # type: ignore[union-attr]
    assert field in fields, payload


def test_a_secret_of_exactly_the_maximum_length_is_accepted(gateway: Gateway) -> None:
    secret = RECORDER.remember_secret(("sk-" + uuid.uuid4().hex * 128)[:4096])
    response = gateway.user().client.post("/llm-credentials", json={"provider": "openai", "secret": secret})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("raw", [b"{", b"[]", b'"sk-abc"', b"null"])
def test_a_body_that_is_not_a_json_object_is_a_400(gateway: Gateway, raw: bytes) -> None:
    user = gateway.user()
    response = user.client.post("/llm-credentials", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert listed_ids(user) == []


def test_an_unknown_room_is_a_404_and_stores_nothing(gateway: Gateway) -> None:
    payload = _refused(
        gateway, {"provider": "openai", "secret": fresh_secret(), "room_id": str(uuid.uuid4())}, status=404
    )
    assert payload["code"] == "GROUP_NOT_FOUND"


def test_a_room_i_am_not_in_is_the_same_404(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    response = cast.outsider.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), "room_id": cast.room_id}
    )
    assert response.status_code == 404
    assert response.json()["code"] == "GROUP_NOT_FOUND"
    assert listed_ids(cast.owner, room_id=cast.room_id) == []


def test_error_messages_never_quote_the_secret(gateway: Gateway) -> None:
    secret = RECORDER.remember_secret("sk-bad secret-" + uuid.uuid4().hex)
    response = gateway.user().client.post("/llm-credentials", json={"provider": "nope", "secret": secret})
    assert response.status_code == 400
    assert secret not in response.text and "bad secret" not in response.text


@pytest.mark.parametrize(
    "secret",
    [
        {"api_key": 2**70, "api_base": "https://x.openai.azure.com"},
        {"api_key": -(2**65)},
        {"api_key": {"a": 123456789012345678901234567890}},
    ],
)
def test_a_json_secret_holding_an_integer_over_64_bits_is_a_400_on_create_and_update(
    gateway: Gateway, secret: dict[str, object]
) -> None:
    payload = _refused(gateway, {"provider": "azure", "secret": secret})
    assert payload["code"] == "VALIDATION_FAILED"
    user = gateway.user()
    created = user.client.post("/llm-credentials", json={"provider": "openai", "secret": fresh_secret()})
    assert created.status_code == 201, created.text
    changed = user.client.patch(f"/llm-credentials/{created.json()['id']}", json={"secret": secret})
    assert changed.status_code == 400, changed.text
    assert changed.json()["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize(
    ("base_url", "says"),
    [
        # A space or a control character: a header injected, a request line split.
        ("https://api.example.com/v1\r\nX-Injected: 1", "control characters"),
        ("https://api.example.com/v\n1", "control characters"),
        ("https://api.exa\x00mple.com/v1", "control characters"),
        ("https://api.example.com/v1\x07", "control characters"),
        ("https://api.example.com/ v1", "control characters"),
        ("https://api.example.com/\tv1", "control characters"),
        ("https://api.example.com/v1\x7f", "control characters"),
        # A dot segment: a path that means another one once the provider's side normalises it.
        ("https://api.example.com/v1/../admin", "segments"),
        ("https://api.example.com/../v1", "segments"),
        ("https://api.example.com/v1/./chat", "segments"),
        ("https://api.example.com/v1/..", "segments"),
        ("https://api.example.com/v1/%2e%2e/admin", "segments"),
        ("https://api.example.com/v1/%2E/x", "segments"),
    ],
)
@pytest.mark.parametrize("strict", [True, False])
def test_a_base_url_that_would_not_be_called_as_written_is_422_on_create_and_update(
    gateway: Gateway, strict_gateway: Gateway, base_url: str, says: str, strict: bool
) -> None:
    target = strict_gateway if strict else gateway  # whatever SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS says
    payload = _refused(target, {"provider": "openai", "secret": fresh_secret(), "base_url": base_url}, 422)
    assert says in str(payload["error"])
    user = target.user()
    good = "https://api.openai.com/v1"
    created = user.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), "base_url": good}
    )
    assert created.status_code == 201, created.text
    credential_id = created.json()["id"]
    changed = user.client.patch(f"/llm-credentials/{credential_id}", json={"base_url": base_url})
    assert changed.status_code == 422, changed.text
    assert user.client.get(f"/llm-credentials/{credential_id}").json()["base_url"] == good


def test_a_base_url_with_dots_inside_a_segment_is_kept(gateway: Gateway) -> None:
    user = gateway.user()
    base_url = "https://api.example.com/v1.../..x/a..b"
    created = user.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), "base_url": base_url}
    )
    assert created.status_code == 201, created.text
    assert created.json()["base_url"] == base_url
