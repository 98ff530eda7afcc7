"""Credentials through the API: created, listed, read, changed, deleted; the secret never comes back."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

from tests.credentials.factories import fresh_secret, listed_ids, new_credential
from tests.groups.factories import add_member, room_cast
from tests.support.gateway import Gateway

FIELDS = {
    "id",
    "provider",
    "label",
    "scope",
    "room_id",
    "user_id",
    "base_url",
    "secret_hint",
    "created_by",
    "created_at",
    "updated_at",
    "last_used_at",
}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_created_credential_shows_its_metadata_and_only_a_hint_of_the_secret(
    gateway: Gateway, provider: str
) -> None:
    user = gateway.user()
    body, secret = new_credential(user, provider, label="work", base_url="https://llm.example.com/v1")
    assert set(body) == FIELDS
    assert body["provider"] == provider and body["scope"] == "user"
    assert body["user_id"] == str(user.id) and body["room_id"] is None and body["created_by"] == str(user.id)
    assert body["secret_hint"] == secret[-4:]
    assert body["label"] == "work" and body["base_url"] == "https://llm.example.com/v1"
    assert body["last_used_at"] is None
    assert datetime.fromisoformat(body["created_at"]).utcoffset() is not None
    assert user.client.get(f"/llm-credentials/{body['id']}").json() == body


def test_surrounding_whitespace_is_trimmed_from_the_secret(gateway: Gateway) -> None:
    user = gateway.user()
    secret = fresh_secret()
    body, _ = new_credential(user, secret="  " + secret + "\n")
    assert body["secret_hint"] == secret[-4:]


def test_a_short_secret_gets_no_hint(gateway: Gateway) -> None:
    body, _ = new_credential(gateway.user(), secret="k-1234")
    assert body["secret_hint"] == ""


def test_the_openapi_document_has_no_field_that_could_return_a_secret(gateway: Gateway) -> None:
    schemas = gateway.client().get("/openapi.json").json()["components"]["schemas"]
    out = schemas["CredentialOut"]["properties"]
    assert set(out) == FIELDS
    assert schemas["CredentialCreate"]["properties"]["secret"]["writeOnly"] is True


def test_a_room_credential_belongs_to_the_room(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    body, _ = new_credential(cast.manager, "anthropic", room_id=cast.room_id)
    assert (body["scope"], body["room_id"], body["user_id"]) == ("room", cast.room_id, None)
    assert body["created_by"] == str(cast.manager.id)
    explicit, _ = new_credential(cast.owner, scope="room", room_id=cast.room_id)
    assert explicit["scope"] == "room"


def test_listing_narrows_by_scope_and_room(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    other = room_cast(gateway)
    user = cast.member
    add_member(other.owner, other.room_id, user.id, "viewer")
    own, _ = new_credential(user)
    in_cast, _ = new_credential(cast.owner, room_id=cast.room_id)
    in_other, _ = new_credential(other.owner, "gemini", room_id=other.room_id)
    new_credential(cast.outsider)
    assert listed_ids(user) == [own["id"], in_cast["id"], in_other["id"]]
    assert listed_ids(user, scope="user") == [own["id"]]
    assert listed_ids(user, scope="room") == [in_cast["id"], in_other["id"]]
    assert listed_ids(user, room_id=other.room_id) == [in_other["id"]]
    assert listed_ids(user, scope="room", room_id=cast.room_id) == [in_cast["id"]]


def test_listing_pages_in_a_stable_order(gateway: Gateway) -> None:
    user = gateway.user()
    ids = [new_credential(user)[0]["id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = user.client.get("/llm-credentials", params=params).json()
        seen += [item["id"] for item in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids


@pytest.mark.parametrize(
    "params",
    [
        {"scope": "team"},
        {"scope": "user", "room_id": str(uuid.uuid4())},
        {"room_id": "x"},
        {"limit": 0},
        {"limit": 501},
        {"cursor": "%%%"},
    ],
)
def test_bad_list_parameters_are_a_400(gateway: Gateway, params: dict[str, str]) -> None:
    response = gateway.user().client.get("/llm-credentials", params=params)
    assert response.status_code == 400, response.text


def test_listing_a_room_i_am_not_in_is_a_404(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    response = cast.outsider.client.get("/llm-credentials", params={"room_id": cast.room_id})
    assert response.status_code == 404
    assert response.json()["code"] == "GROUP_NOT_FOUND"


def test_patch_changes_label_base_url_and_secret(gateway: Gateway) -> None:
    user = gateway.user()
    body, _ = new_credential(user, label="old", base_url="https://a.example.com/v1")
    path = f"/llm-credentials/{body['id']}"
    relabelled = user.client.patch(path, json={"label": "new"}).json()
    assert relabelled["label"] == "new" and relabelled["base_url"] == "https://a.example.com/v1"
    assert relabelled["secret_hint"] == body["secret_hint"]
    assert relabelled["updated_at"] > body["updated_at"]
    new_secret = fresh_secret("sk-rotated-")
    rekeyed = user.client.patch(path, json={"secret": new_secret, "base_url": None}).json()
    assert rekeyed["secret_hint"] == new_secret[-4:] and rekeyed["base_url"] is None
    assert rekeyed["label"] == "new"
    assert user.client.patch(path, json={"label": None}).json()["label"] is None


@pytest.mark.parametrize(
    "patch",
    [
        {"secret": None},
        {"secret": ""},
        {"secret": "   "},
        {"secret": "x" * 4097},
        {"provider": "gemini"},
        {"scope": "room"},
        {"label": 12},
        {"base_url": 5},
    ],
)
def test_bad_changes_are_a_400_and_change_nothing(gateway: Gateway, patch: dict[str, object]) -> None:
    user = gateway.user()
    body, _ = new_credential(user)
    response = user.client.patch(f"/llm-credentials/{body['id']}", json=patch)
    assert response.status_code == 400, response.text
    assert user.client.get(f"/llm-credentials/{body['id']}").json() == body


def test_a_deleted_credential_is_gone(gateway: Gateway) -> None:
    user = gateway.user()
    body, _ = new_credential(user)
    assert user.client.delete(f"/llm-credentials/{body['id']}").status_code == 204
    assert user.client.get(f"/llm-credentials/{body['id']}").status_code == 404
    assert user.client.delete(f"/llm-credentials/{body['id']}").status_code == 404
    assert listed_ids(user) == []


def test_an_unknown_or_malformed_id_is_a_4xx(gateway: Gateway) -> None:
    client = gateway.user().client
    assert client.get(f"/llm-credentials/{uuid.uuid4()}").status_code == 404
    assert client.get("/llm-credentials/not-a-uuid").status_code == 400
