"""Economies over REST: stable ids, the config sync, who may see and change what, and bad input."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from switchboard.config_file import ConfigError, load_config, locate
from switchboard.metering.economies import check_config_economies
from tests.conftest import GatewayFactory
from tests.metering.conftest import (
    TEAM_MARKUP_BPS,
    EconomyFactory,
    add_participant,
    make_outcome,
    metering_config,
    record,
)
from tests.support.gateway import Gateway, User, write_config


def uuid5_of(slug: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:economy:{slug}"))


def test_default_and_config_economies_exist_under_their_uuid5_ids(admin: User) -> None:
    default = admin.client.get("/economies/default")
    team = admin.client.get(f"/economies/{uuid5_of('team')}")
    assert default.status_code == 200 and team.status_code == 200
    assert default.json()["id"] == uuid5_of("default")
    assert team.json() | {"created_at": None, "updated_at": None} == {
        "id": uuid5_of("team"),
        "slug": "team",
        "name": "Team",
        "currency": "USD",
        "markup_bps": TEAM_MARKUP_BPS,
        "budget": "5000000000",
        "managed_by": "config",
        "price_overrides": {"openai/gpt-4o-mini": {"input_per_mtok": "1.10", "output_per_mtok": "2.20"}},
        "created_at": None,
        "updated_at": None,
    }


def test_restarting_on_the_same_database_keeps_ids_and_applies_config_changes(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    first = make_gateway(config=metering_config(fake_provider.base_url))
    admin = first.user(role="Admin")
    before = admin.client.get("/economies", params={"limit": 500}).json()["data"]
    first.stop()
    changed = metering_config(fake_provider.base_url)
    changed["economies"][1]["markup_bps"] = 100
    second = make_gateway(config=changed, database_url=first.settings.database_url)
    try:
        after = second.user(role="Admin").client.get("/economies", params={"limit": 500}).json()["data"]
        assert [(e["id"], e["slug"]) for e in after] == [(e["id"], e["slug"]) for e in before]
        assert next(e for e in after if e["slug"] == "team")["markup_bps"] == 100
    finally:
        second.stop()


def test_a_config_economy_whose_slug_an_api_economy_took_stops_the_start(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    first = make_gateway(config=metering_config(fake_provider.base_url))
    created = first.user(role="Admin").client.post("/economies", json={"slug": "clash", "name": "API"})
    assert created.status_code == 201
    first.stop()
    config = metering_config(fake_provider.base_url)
    config["economies"].append({"slug": "clash", "name": "Config"})
    with pytest.raises(RuntimeError):
        make_gateway(config=config, database_url=first.settings.database_url)


def test_every_user_sees_default_but_not_economies_they_do_not_participate_in(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    other = make_economy()
    user = metering_gateway.user()
    listed = user.client.get("/economies").json()
    assert [e["slug"] for e in listed["data"]] == ["default"]
    assert listed["next_cursor"] is None
    assert user.client.get(f"/economies/{other['slug']}").status_code == 404
    assert user.client.get("/economies/team").status_code == 404


def test_usage_readable_lists_only_the_economies_whose_usage_the_caller_may_read(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    owned, joined, via_room = make_economy(), make_economy(), make_economy()
    user = metering_gateway.user()
    add_participant(admin.client, owned["id"], user_id=str(user.id), role="owner")
    add_participant(admin.client, joined["id"], user_id=str(user.id), role="member")
    room = user.client.post("/working-groups", json={"name": "r"}).json()["id"]
    add_participant(admin.client, via_room["id"], room_id=room)

    def slugs(who: User, **params: str) -> list[str]:
        response = who.client.get("/economies", params=params)
        assert response.status_code == 200, response.text
        return [e["slug"] for e in response.json()["data"]]

    assert slugs(user) == sorted(["default", owned["slug"], joined["slug"], via_room["slug"]])
    assert slugs(user, usage="readable") == [owned["slug"]]
    for slug in slugs(user, usage="readable"):
        assert user.client.get(f"/economies/{slug}/usage").status_code == 200
    for slug in set(slugs(user)) - set(slugs(user, usage="readable")):
        assert user.client.get(f"/economies/{slug}/usage").status_code == 403
    reader = metering_gateway.user(permissions=["ReadUsage"])
    assert {"default", "team", owned["slug"]} <= set(slugs(reader, usage="readable", limit="500"))
    assert user.client.get("/economies", params={"usage": "everything"}).status_code == 400


def test_admin_and_read_usage_see_every_economy_page_by_page(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    for _ in range(3):
        make_economy()
    reader = metering_gateway.user(role="User", permissions=["ReadUsage"])
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = reader.client.get("/economies", params=params).json()
        seen += [e["slug"] for e in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(seen) and len(seen) == len(set(seen)) >= 5
    assert {"default", "team"} <= set(seen)


def test_admin_creates_an_economy_and_a_taken_slug_is_409(admin: User) -> None:
    slug = f"acme-{uuid.uuid4().hex[:6]}"
    body = {
        "slug": slug,
        "name": "Acme",
        "currency": "EUR",
        "markup_bps": 150,
        "budget": "1500",
        "price_overrides": {"anthropic/claude-3-5-haiku-latest": {"input_per_mtok": "0.5"}},
    }
    created = admin.client.post("/economies", json=body)
    assert created.status_code == 201
    economy = created.json()
    assert uuid.UUID(economy["id"]).version == 4
    assert (economy["currency"], economy["budget"], economy["managed_by"]) == ("EUR", "1500", "api")
    assert economy["price_overrides"] == {
        "anthropic/claude-3-5-haiku-latest": {"input_per_mtok": "0.5", "output_per_mtok": None}
    }
    assert admin.client.get(f"/economies/{economy['id']}").json() == economy
    again = admin.client.post("/economies", json={"slug": slug, "name": "Other"})
    assert again.status_code == 409 and again.json()["code"] == "CONFLICT"
    assert admin.client.post("/economies", json={"slug": "default", "name": "x"}).status_code == 409


@pytest.mark.parametrize("role", ["User", "Manager", "Viewer", "ApiClient"])
def test_only_admins_create_or_change_economies(
    metering_gateway: Gateway, make_economy: EconomyFactory, role: str
) -> None:
    economy = make_economy()
    caller = metering_gateway.user(role=role, permissions=["ReadUsage"])
    created = caller.client.post("/economies", json={"slug": f"x-{uuid.uuid4().hex[:8]}", "name": "x"})
    changed = caller.client.patch(f"/economies/{economy['id']}", json={"name": "renamed"})
    assert (created.status_code, changed.status_code) == (403, 403)
    assert created.json()["code"] == "FORBIDDEN"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"budget": 5000}, "budget"),  # a JSON number where an amount string is required
        ({"budget": "-1"}, "budget"),
        ({"budget": "1.5"}, "budget"),
        ({"budget": "01"}, "budget"),
        ({"markup_bps": "25"}, "markup_bps"),
        ({"markup_bps": -1}, "markup_bps"),
        ({"slug": "Has Caps"}, "slug"),
        ({"slug": str(uuid.uuid4())}, "slug"),
        ({"currency": ""}, "currency"),
        ({"price_overrides": {"gpt-4o": {"input_per_mtok": "1"}}}, "price_overrides"),
        ({"price_overrides": {"openai/gpt-4o": {"input_per_mtok": 1}}}, "price_overrides"),
        ({"price_overrides": {"openai/gpt-4o": {"input_per_mtok": "cheap"}}}, "price_overrides"),
        # SPEC §20's price keys: each a non-negative decimal string; an unknown key is named.
        ({"price_overrides": {"openai/gpt-4o": {"cache_read_per_mtok": "-0.1"}}}, "cache_read_per_mtok"),
        ({"price_overrides": {"openai/gpt-4o": {"cache_write_1h_per_mtok": 6}}}, "cache_write_1h_per_mtok"),
        ({"price_overrides": {"openai/gpt-4o": {"reasoning_per_mtok": "NaN"}}}, "reasoning_per_mtok"),
        ({"price_overrides": {"openai/gpt-4o": {"cache_reads_per_mtok": "1"}}}, "cache_reads_per_mtok"),
        ({"price_overrides": {"openai/gpt-4o": {"above_200k": {"output_per_mtok": "x"}}}}, "above_200k"),
        ({"price_overrides": {"openai/gpt-4o": {"above_200k": {"above_200k": {}}}}}, "above_200k"),
        ({"surprise": True}, "surprise"),
    ],
)
def test_bad_economy_input_is_400_and_stores_nothing(admin: User, body: dict[str, Any], field: str) -> None:
    slug = f"bad-{uuid.uuid4().hex[:8]}"
    response = admin.client.post("/economies", json={"slug": slug, "name": "Bad"} | body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"
    assert field in response.json()["error"]
    assert admin.client.get(f"/economies/{slug}").status_code == 404


def test_malformed_json_is_400(admin: User) -> None:
    response = admin.client.post(
        "/economies", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400


def test_patch_changes_only_given_fields_and_null_budget_clears_it(
    admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy(budget="100", markup_bps=10)
    patched = admin.client.patch(f"/economies/{economy['slug']}", json={"name": "Renamed", "budget": None})
    assert patched.status_code == 200
    body = patched.json()
    assert (body["name"], body["budget"], body["markup_bps"]) == ("Renamed", None, 10)
    assert admin.client.patch(f"/economies/{economy['id']}", json={"budget": 7}).status_code == 400
    assert admin.client.patch(f"/economies/{economy['id']}", json={"slug": "new"}).status_code == 400
    assert admin.client.patch(f"/economies/{economy['id']}", json={"name": None}).status_code == 400
    assert admin.client.get(f"/economies/{economy['id']}").json()["name"] == "Renamed"


def test_config_economies_are_changed_in_the_config_not_over_rest(admin: User) -> None:
    response = admin.client.patch("/economies/team", json={"markup_bps": 0})
    assert response.status_code == 409
    assert admin.client.get("/economies/team").json()["markup_bps"] == TEAM_MARKUP_BPS


def test_an_admin_deletes_an_economy_nothing_depends_on_with_its_participants_and_budget(
    admin: User, make_economy: EconomyFactory, metering_gateway: Gateway
) -> None:
    economy = make_economy(budget="1000")
    owner = metering_gateway.user()
    add_participant(admin.client, economy["id"], user_id=str(owner.id), role="owner")
    on_it = {"subject_type": "economy", "subject_id": economy["id"]}
    (budget,) = admin.client.get("/limits", params=on_it).json()["data"]

    assert owner.client.delete(f"/economies/{economy['id']}").status_code == 403  # owners do not delete
    deleted = admin.client.delete(f"/economies/{economy['slug']}")
    assert deleted.status_code == 204, deleted.text
    assert admin.client.get(f"/economies/{economy['id']}").status_code == 404
    assert admin.client.get(f"/limits/{budget['id']}").status_code == 404
    assert economy["id"] not in {e["id"] for e in owner.client.get("/economies").json()["data"]}
    assert admin.client.delete(f"/economies/{economy['id']}").status_code == 404


def test_an_economy_with_usage_a_room_or_a_limit_is_kept_with_a_409_saying_why(
    admin: User, make_economy: EconomyFactory, metering_gateway: Gateway
) -> None:
    for config_or_default in ("team", "default"):
        assert admin.client.delete(f"/economies/{config_or_default}").status_code == 409

    metered = make_economy()
    record(metering_gateway, [make_outcome(metered["id"], admin.id, prompt_tokens=3, completion_tokens=1)])
    refused = admin.client.delete(f"/economies/{metered['id']}")
    assert refused.status_code == 409 and "usage records" in refused.json()["error"]

    limited = make_economy()
    limit = admin.client.post(
        "/limits",
        json={"subject_type": "user", "subject_id": str(admin.id), "economy_id": limited["id"],
              "metric": "requests", "window": "day", "amount": "5"},
    )  # fmt: skip
    assert limit.status_code == 201, limit.text
    refused = admin.client.delete(f"/economies/{limited['id']}")
    assert refused.status_code == 409 and "limits" in refused.json()["error"]
    assert admin.client.delete(f"/limits/{limit.json()['id']}").status_code == 204
    assert admin.client.delete(f"/economies/{limited['id']}").status_code == 204

    defaulted = make_economy()
    room = admin.client.post("/working-groups", json={"name": "r", "default_economy_id": defaulted["id"]})
    assert room.status_code == 201, room.text
    refused = admin.client.delete(f"/economies/{defaulted['id']}")
    assert refused.status_code == 409 and "room" in refused.json()["error"]
    for kept in (metered, defaulted):
        assert admin.client.get(f"/economies/{kept['id']}").status_code == 200


@pytest.mark.parametrize(
    "path", ["", "/participants", "/usage", "/usage/summary?group_by=day", "/usage/export"]
)
def test_unknown_economy_is_404_by_slug_or_id(admin: User, path: str) -> None:
    for ref in ("no-such-economy", str(uuid.uuid4())):
        response = admin.client.get(f"/economies/{ref}{path}")
        assert response.status_code == 404, (ref, path, response.text)
        assert response.json()["code"] == "NOT_FOUND"
    assert admin.client.patch(f"/economies/{uuid.uuid4()}", json={"name": "x"}).status_code == 404


def test_owners_manage_participants_and_members_do_not(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    owner, member, outsider = (metering_gateway.user() for _ in range(3))
    add_participant(admin.client, economy["id"], user_id=str(owner.id), role="owner")
    added = owner.client.post(f"/economies/{economy['slug']}/participants", json={"user_id": str(member.id)})
    assert added.status_code == 201
    assert added.json() | {"created_at": None} == {
        "economy_id": economy["id"],
        "kind": "user",
        "user_id": str(member.id),
        "room_id": None,
        "role": "member",
        "created_at": None,
    }
    # A member sees the economy but may not manage it; an outsider does not see it at all.
    seen = [e["slug"] for e in member.client.get("/economies").json()["data"]]
    assert seen == sorted(["default", economy["slug"]])
    path = f"/economies/{economy['id']}/participants"
    as_member = member.client.post(path, json={"user_id": str(outsider.id)})
    assert as_member.status_code == 403
    as_outsider = outsider.client.post(path, json={"user_id": str(outsider.id)})
    assert as_outsider.status_code == 404
    # Changing a role answers 200; the list shows both.
    promoted = owner.client.post(
        f"/economies/{economy['id']}/participants", json={"user_id": str(member.id), "role": "owner"}
    )
    assert (promoted.status_code, promoted.json()["role"]) == (200, "owner")
    listed = owner.client.get(f"/economies/{economy['id']}/participants").json()["data"]
    assert sorted((p["user_id"], p["role"]) for p in listed) == sorted(
        [(str(owner.id), "owner"), (str(member.id), "owner")]
    )
    assert owner.client.delete(f"/economies/{economy['id']}/participants/{member.id}").status_code == 204
    assert owner.client.delete(f"/economies/{economy['id']}/participants/{member.id}").status_code == 404
    assert member.client.get(f"/economies/{economy['id']}").status_code == 404


def test_a_room_participant_makes_its_members_participants(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    creator, colleague = metering_gateway.user(), metering_gateway.user()
    room = creator.client.post("/working-groups", json={"name": "billing room"})
    assert room.status_code == 201, room.text
    room_id = room.json()["id"]
    joined = creator.client.post(
        f"/working-groups/{room_id}/members", json={"user_id": str(colleague.id), "role": "member"}
    )
    assert joined.status_code == 201, joined.text
    assert colleague.client.get(f"/economies/{economy['id']}").status_code == 404
    added = admin.client.post(f"/economies/{economy['id']}/participants", json={"room_id": room_id})
    assert (added.status_code, added.json()["kind"], added.json()["role"]) == (201, "room", "member")
    assert colleague.client.get(f"/economies/{economy['id']}").status_code == 200
    # Rooms confer membership, not ownership.
    assert colleague.client.get(f"/economies/{economy['id']}/usage").status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"user_id": str(uuid.uuid4()), "room_id": str(uuid.uuid4())},
        {"room_id": str(uuid.uuid4()), "role": "owner"},
        {"user_id": "not-a-uuid"},
        {"user_id": str(uuid.uuid4()), "role": "boss"},
    ],
)
def test_bad_participant_input_is_400(
    admin: User, make_economy: EconomyFactory, body: dict[str, Any]
) -> None:
    economy = make_economy()
    assert admin.client.post(f"/economies/{economy['id']}/participants", json=body).status_code == 400
    assert admin.client.get(f"/economies/{economy['id']}/participants").json()["data"] == []


def test_removing_with_a_non_uuid_participant_id_is_400(admin: User, make_economy: EconomyFactory) -> None:
    economy = make_economy()
    assert admin.client.delete(f"/economies/{economy['id']}/participants/nope").status_code == 400


@pytest.mark.parametrize(
    ("economy", "problem"),
    [
        ({"slug": "team", "name": "Again"}, "economies.2.slug: economy 'team' is declared twice"),
        ({"slug": "cheap", "name": "Cheap", "budget": "12.5"}, "economies.2.budget"),
        (
            {"slug": "cheap", "name": "Cheap", "price_overrides": {"gpt-4o": {"input_per_mtok": "1"}}},
            "economies.2.price_overrides",
        ),
    ],
)
def test_a_bad_config_economy_is_refused_naming_its_line(
    tmp_path: Path, fake_provider: Any, economy: dict[str, Any], problem: str
) -> None:
    config = metering_config(fake_provider.base_url)
    config["economies"].append(economy)
    path = write_config(tmp_path, config)
    with pytest.raises(ConfigError) as refused:
        check_config_economies(load_config(path))
    assert problem in str(refused.value)
    assert f"{path}:" in locate(path, str(refused.value))
