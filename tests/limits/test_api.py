"""/limits over HTTP: create, read, change, delete, status, the caller's own limits, and paging."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import httpx

from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitHoldRow
from tests.limits.conftest import create_limit, join_economy, new_economy
from tests.support.gateway import Gateway, User
from tests.support.recorder import tls_context

LIMIT_FIELDS = {
    "id",
    "authority",
    "subject_type",
    "subject_id",
    "economy_id",
    "metric",
    "window",
    "amount",
    "allow_unpriced",
    "managed_by",
    "created_by",
    "created_at",
}


def first_of_next_month(now: datetime) -> datetime:
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )


def test_an_admin_creates_a_limit_naming_the_economy_by_slug_and_the_id_is_stored(admin: User) -> None:
    economy = new_economy(admin)
    response = admin.client.post(
        "/limits",
        json={
            "subject_type": "economy",
            "subject_id": economy["slug"],
            "metric": "cost",
            "window": "month",
            "amount": "5000000000",
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == LIMIT_FIELDS
    assert body | {"id": None, "created_at": None} == {
        "id": None,
        "subject_type": "economy",
        "subject_id": economy["id"],
        "economy_id": None,
        "metric": "cost",
        "window": "month",
        "amount": "5000000000",
        "allow_unpriced": False,
        "managed_by": "api",
        "created_by": str(admin.id),
        "authority": "admin",
        "created_at": None,
    }
    assert datetime.fromisoformat(body["created_at"]).tzinfo is not None
    assert admin.client.get(f"/limits/{body['id']}").json() == body


def test_a_user_limit_narrowed_to_an_economy_by_slug_stores_the_economy_id(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin)
    user = limits_gateway.user()
    body = create_limit(
        admin.client,
        subject_type="user",
        subject_id=str(user.id).upper(),
        economy_id=economy["slug"],
        metric="tokens",
        window="hour",
        amount="0042",
        allow_unpriced=True,
    )
    assert (body["subject_id"], body["economy_id"]) == (str(user.id), economy["id"])
    assert (body["metric"], body["window"], body["amount"], body["allow_unpriced"]) == (
        "tokens",
        "hour",
        "42",
        True,
    )


def test_patch_changes_the_amount_and_allow_unpriced_and_answers_the_whole_limit(admin: User) -> None:
    economy = new_economy(admin)
    created = create_limit(admin.client, subject_type="economy", subject_id=economy["id"])
    patched = admin.client.patch(f"/limits/{created['id']}", json={"amount": "250"})
    assert patched.status_code == 200
    assert patched.json() == created | {"amount": "250"}
    again = admin.client.patch(f"/limits/{created['id']}", json={"allow_unpriced": True})
    assert again.json() == created | {"amount": "250", "allow_unpriced": True}
    assert admin.client.patch(f"/limits/{created['id']}", json={}).json() == again.json()
    assert admin.client.get(f"/limits/{created['id']}").json() == again.json()


def test_delete_answers_204_and_the_limit_is_gone(admin: User) -> None:
    created = create_limit(admin.client, subject_type="economy", subject_id=new_economy(admin)["id"])
    deleted = admin.client.delete(f"/limits/{created['id']}")
    assert (deleted.status_code, deleted.content) == (204, b"")
    for response in (
        admin.client.get(f"/limits/{created['id']}"),
        admin.client.get(f"/limits/{created['id']}/status"),
        admin.client.patch(f"/limits/{created['id']}", json={"amount": "1"}),
        admin.client.delete(f"/limits/{created['id']}"),
    ):
        assert response.status_code == 404
        assert response.json() == {"error": "limit not found", "code": "NOT_FOUND"}


def test_a_second_limit_counting_the_same_thing_is_409_naming_the_first(admin: User) -> None:
    economy = new_economy(admin)
    first = create_limit(admin.client, subject_type="economy", subject_id=economy["slug"])
    again = admin.client.post(
        "/limits",
        json={
            "subject_type": "economy",
            "subject_id": economy["id"],
            "metric": "requests",
            "window": "day",
            "amount": "5",
        },
    )
    assert again.status_code == 409
    assert again.json()["code"] == "CONFLICT" and first["id"] in again.json()["error"]
    other_window = create_limit(
        admin.client, subject_type="economy", subject_id=economy["id"], window="month"
    )
    assert other_window["id"] != first["id"]


def test_the_status_of_a_fresh_limit_is_whole_and_resets_at_its_window_boundary(admin: User) -> None:
    economy = new_economy(admin)
    monthly = create_limit(
        admin.client,
        subject_type="economy",
        subject_id=economy["id"],
        metric="cost",
        window="month",
        amount="900",
    )
    total = create_limit(
        admin.client,
        subject_type="economy",
        subject_id=economy["id"],
        metric="cost",
        window="total",
        amount="5",
    )
    status = admin.client.get(f"/limits/{monthly['id']}/status")
    assert status.status_code == 200
    body = status.json()
    assert set(body) == {"used", "reserved", "remaining", "resets_at"}
    assert (body["used"], body["reserved"], body["remaining"]) == ("0", "0", "900")
    assert datetime.fromisoformat(body["resets_at"]) == first_of_next_month(utcnow())
    assert admin.client.get(f"/limits/{total['id']}/status").json() == {
        "used": "0",
        "reserved": "0",
        "remaining": "5",
        "resets_at": None,
    }


def hold(gateway: Gateway, limit_id: str, amount: int, lease: timedelta) -> None:
    """A running call's reservation, as the enforcement side writes it."""

    async def run() -> None:
        async with gateway.app.state.sessionmaker() as session, session.begin():
            session.add(
                LimitHoldRow(
                    call_id=uuid.uuid4().hex,
                    limit_id=uuid.UUID(limit_id),
                    amount=amount,
                    lease_until=utcnow() + lease,
                    call=None,
                )
            )

    gateway.server.call_soon(run())


def test_status_counts_live_holds_as_reserved_and_clips_remaining_at_zero(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin)
    limit = create_limit(
        admin.client, subject_type="economy", subject_id=economy["id"], metric="tokens", amount="100"
    )
    hold(limits_gateway, limit["id"], 30, timedelta(minutes=1))
    hold(limits_gateway, limit["id"], 1000, timedelta(minutes=-1))  # a dead call's: its lease ran out
    assert admin.client.get(f"/limits/{limit['id']}/status").json()["reserved"] == "30"
    assert admin.client.get(f"/limits/{limit['id']}/status").json()["remaining"] == "70"
    hold(limits_gateway, limit["id"], 500, timedelta(minutes=1))
    status = admin.client.get(f"/limits/{limit['id']}/status").json()
    assert (status["used"], status["reserved"], status["remaining"]) == ("0", "530", "0")


def test_usage_me_limits_lists_my_user_limits_and_my_economies_with_their_status(
    limits_gateway: Gateway, admin: User
) -> None:
    mine, theirs = new_economy(admin), new_economy(admin)
    me, someone = limits_gateway.user(), limits_gateway.user()
    join_economy(admin, mine["id"], me)
    expected = [
        create_limit(admin.client, subject_type="economy", subject_id=mine["id"], amount="10"),
        create_limit(admin.client, subject_type="user", subject_id=str(me.id), amount="20"),
        create_limit(
            admin.client, subject_type="user", subject_id=str(me.id), economy_id=mine["id"], window="month"
        ),
    ]
    create_limit(admin.client, subject_type="economy", subject_id=theirs["id"])
    create_limit(admin.client, subject_type="user", subject_id=str(someone.id))
    listed = me.client.get("/usage/me/limits")
    assert listed.status_code == 200
    body = listed.json()
    assert body["next_cursor"] is None
    assert [item["id"] for item in body["data"]] == [limit["id"] for limit in expected]
    first = body["data"][0]
    assert {k: v for k, v in first.items() if k != "status"} == expected[0]
    assert first["status"] | {"resets_at": None} == {
        "used": "0",
        "reserved": "0",
        "remaining": "10",
        "resets_at": None,
    }
    assert someone.client.get("/usage/me/limits").json()["data"][0]["subject_id"] == str(someone.id)


def test_usage_me_limits_pages(limits_gateway: Gateway, admin: User) -> None:
    me = limits_gateway.user()
    for window in ("minute", "hour", "day"):
        create_limit(admin.client, subject_type="user", subject_id=str(me.id), window=window)
    first = me.client.get("/usage/me/limits", params={"limit": 2}).json()
    second = me.client.get("/usage/me/limits", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [item["window"] for item in first["data"] + second["data"]] == ["minute", "hour", "day"]
    assert second["next_cursor"] is None


def collect(client: httpx.Client, params: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    items: list[dict[str, Any]] = []
    pages = 0
    cursor = None
    while True:
        response = client.get("/limits", params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        pages += 1
        items += response.json()["data"]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return items, pages


def test_list_pages_in_creation_order_with_an_opaque_cursor_and_filters(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin)
    users = [limits_gateway.user() for _ in range(5)]
    made = [
        create_limit(admin.client, subject_type="user", subject_id=str(user.id), economy_id=economy["slug"])
        for user in users
    ]
    create_limit(admin.client, subject_type="economy", subject_id=economy["id"])
    items, pages = collect(admin.client, {"economy_id": economy["slug"], "limit": 2})
    assert [item["id"] for item in items] == [limit["id"] for limit in made]
    assert pages == 3
    by_subject = admin.client.get(
        "/limits", params={"subject_type": "user", "subject_id": str(users[3].id)}
    ).json()
    assert [item["id"] for item in by_subject["data"]] == [made[3]["id"]]
    by_economy = admin.client.get(
        "/limits", params={"subject_type": "economy", "subject_id": economy["slug"]}
    ).json()["data"]
    assert [(item["subject_type"], item["subject_id"]) for item in by_economy] == [("economy", economy["id"])]


def test_the_limits_routes_are_tagged_and_declare_their_errors(limits_gateway: Gateway) -> None:
    # the document is built on the first request
    document = httpx.get(limits_gateway.url + "/openapi.json", timeout=60, verify=tls_context()).json()
    paths = document["paths"]
    for path in ("/limits", "/limits/{limit_id}", "/limits/{limit_id}/status", "/usage/me/limits"):
        for operation in paths[path].values():
            assert operation["tags"] == ["Limits"]
            assert {"400", "401", "403", "404"} <= set(operation["responses"])
    assert "409" in paths["/limits/{limit_id}"]["delete"]["responses"]
    assert "409" in paths["/limits"]["post"]["responses"]
    assert "201" in paths["/limits"]["post"]["responses"]


class Spy:
    """Stands in for the enforcement registry: counts `changed()` calls and passes them on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def changed(self) -> None:
        self.calls += 1
        if self.inner is not None:
            self.inner.changed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_every_change_tells_this_process_registry(limits_gateway: Gateway, admin: User) -> None:
    state = limits_gateway.app.state
    inner = getattr(state, "limits", None)
    spy = Spy(inner)
    state.limits = spy
    try:
        economy = new_economy(admin)  # no budget: nothing to tell, but harmless
        before = spy.calls
        created = create_limit(admin.client, subject_type="economy", subject_id=economy["id"])
        admin.client.patch(f"/limits/{created['id']}", json={"amount": "7"})
        admin.client.delete(f"/limits/{created['id']}")
        admin.client.patch(f"/economies/{economy['id']}", json={"budget": "1000"})
        refused = admin.client.post("/limits", json={"subject_type": "economy", "subject_id": "no-such"})
        assert refused.status_code == 400
        assert spy.calls - before == 4
    finally:
        if inner is None:
            del state.limits
        else:
            state.limits = inner
