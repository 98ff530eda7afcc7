"""Bad input to /limits is 400 (a subject that does not exist 404), flat, and stores nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.limits.conftest import count_limits, create_limit, limit_body, new_economy
from tests.support.gateway import Gateway, User

ECONOMY = "<economy>"  # replaced by a fresh economy's slug


def fill(body: dict[str, Any], slug: str) -> dict[str, Any]:
    return {key: slug if value == ECONOMY else value for key, value in body.items()}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount=100), "amount"),  # a JSON number
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount=1.5), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount="-5"), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount="1.5"), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount="1e3"), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount=" 5"), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount=""), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount="٣"), "amount"),  # a non-ASCII digit
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount="9223372036854775808"), "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, amount=None), "amount"),
        ({"subject_type": "economy", "subject_id": ECONOMY, "metric": "cost", "window": "day"}, "amount"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, metric="dollars"), "metric"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, window="week"), "window"),
        (limit_body(subject_type="team", subject_id=ECONOMY), "subject_type"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, economy_id=ECONOMY), "economy_id"),
        (limit_body(subject_type="user", subject_id="not-a-uuid"), "subject_id"),
        (limit_body(subject_type="room", subject_id="12345"), "subject_id"),
        (limit_body(subject_type="api_key", subject_id="svc_api_abc"), "subject_id"),
        (limit_body(subject_type="agent", subject_id="a" * 65), "subject_id"),
        (limit_body(subject_type="user", subject_id=str(uuid.uuid4()), economy_id=""), "economy_id"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, allow_unpriced="yes"), "allow_unpriced"),
        (limit_body(subject_type="economy", subject_id=ECONOMY, extra="x"), "extra"),
        (limit_body(subject_type="economy", subject_id=123), "subject_id"),
    ],
)
def test_bad_input_is_400_and_nothing_is_stored(
    limits_gateway: Gateway, admin: User, body: dict[str, Any], field: str
) -> None:
    slug = new_economy(admin)["slug"]
    before = count_limits(limits_gateway)
    response = admin.client.post("/limits", json=fill(body, slug))
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["code"] == "VALIDATION_FAILED" and isinstance(error["error"], str)
    assert field in error["error"]
    assert count_limits(limits_gateway) == before


def test_malformed_json_is_400(limits_gateway: Gateway, admin: User) -> None:
    before = count_limits(limits_gateway)
    response = admin.client.post(
        "/limits", content=b'{"subject_type": ', headers={"content-type": "application/json"}
    )
    assert (response.status_code, response.json()["code"]) == (400, "BAD_REQUEST")
    assert count_limits(limits_gateway) == before


@pytest.mark.parametrize(
    ("fields", "what"),
    [
        ({"subject_type": "economy", "subject_id": "no-such-economy"}, "economy"),
        ({"subject_type": "economy", "subject_id": str(uuid.uuid4())}, "economy"),
        (
            {"subject_type": "user", "subject_id": str(uuid.uuid4()), "economy_id": "no-such-economy"},
            "economy",
        ),
        ({"subject_type": "room", "subject_id": str(uuid.uuid4())}, "working group"),
        ({"subject_type": "agent", "subject_id": "no-such-agent"}, "agent"),
        ({"subject_type": "api_key", "subject_id": str(uuid.uuid4())}, "API key"),
    ],
)
def test_a_subject_that_does_not_exist_is_404_and_nothing_is_stored(
    limits_gateway: Gateway, admin: User, fields: dict[str, Any], what: str
) -> None:
    before = count_limits(limits_gateway)
    response = admin.client.post("/limits", json=limit_body(**fields))
    assert response.status_code == 404, response.text
    assert what in response.json()["error"]
    assert count_limits(limits_gateway) == before


def test_a_user_limit_may_precede_the_users_first_call(limits_gateway: Gateway, admin: User) -> None:
    # Users of the auth service are known only by their token's `sub`.
    never_seen = str(uuid.uuid4())
    assert create_limit(admin.client, subject_type="user", subject_id=never_seen)["subject_id"] == never_seen


@pytest.mark.parametrize(
    "body",
    [
        {"amount": 5},
        {"amount": "-1"},
        {"amount": None},
        {"allow_unpriced": None},
        {"allow_unpriced": "true"},
        {"metric": "tokens"},
        {"subject_type": "user"},
    ],
)
def test_a_bad_patch_is_400_and_changes_nothing(admin: User, body: dict[str, Any]) -> None:
    made = create_limit(admin.client, subject_type="economy", subject_id=new_economy(admin)["id"])
    response = admin.client.patch(f"/limits/{made['id']}", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"
    assert admin.client.get(f"/limits/{made['id']}").json() == made


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/limits/not-a-uuid"),
        ("PATCH", "/limits/not-a-uuid"),
        ("DELETE", "/limits/not-a-uuid"),
        ("GET", "/limits/not-a-uuid/status"),
    ],
)
def test_a_malformed_limit_id_is_400(admin: User, method: str, path: str) -> None:
    response = admin.client.request(method, path, json={} if method == "PATCH" else None)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"limit": 0}, 400),
        ({"limit": 501}, 400),
        ({"cursor": "not-ours"}, 400),
        ({"cursor": "WzEsMl0"}, 400),  # [1, 2]: well-formed base64 JSON, not one of our keys
        ({"subject_type": "team"}, 400),
        ({"subject_id": str(uuid.uuid4())}, 400),  # without subject_type
        ({"subject_type": "user", "subject_id": "nope"}, 400),
        ({"economy_id": "no-such-economy"}, 404),
        ({"subject_type": "economy", "subject_id": "no-such-economy"}, 404),
    ],
)
def test_bad_list_parameters(admin: User, params: dict[str, Any], status: int) -> None:
    response = admin.client.get("/limits", params=params)
    assert response.status_code == status, response.text
    assert set(response.json()) == {"error", "code"}


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 501}, {"cursor": "not-ours"}])
def test_bad_paging_of_my_limits_is_400(admin: User, params: dict[str, Any]) -> None:
    assert admin.client.get("/usage/me/limits", params=params).status_code == 400
