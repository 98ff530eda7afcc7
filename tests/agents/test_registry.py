"""Publishing, reading, versioning and retiring agents over HTTP, with the seed's shapes and statuses."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.conftest import create, make_spec
from tests.support.gateway import Gateway

SUMMARY_KEYS = {"id", "version", "display_name", "role", "source", "created_by", "working_group_id"}


def nested_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return dict(body["error"])


def test_created_agent_reads_back_as_its_full_spec_with_defaults_and_created_at(gateway: Gateway) -> None:
    user = gateway.user()
    spec = make_spec(model={"kind": "alias", "alias": "fast"}, expertise=["maths"], metadata={"k": [1, 2]})
    created = user.client.post("/agents", json=spec)
    assert created.status_code == 201
    assert created.json() == {"id": spec["id"], "version": "1"}

    body = user.client.get(f"/agents/{spec['id']}").json()
    assert body["created_at"]
    given = {key: value for key, value in spec.items() if key != "model"}
    assert {key: body[key] for key in given} == given
    assert body["max_tokens"] == 4000
    assert body["context_builder"] == "summarised"
    assert body["output_parser"] == "tool_calls"
    assert body["memory_enabled"] is False
    assert body["skills"] == [] and body["pinned_kg_ids"] == []
    assert body["created_by"] == str(user.id)  # the author, when the spec names none
    assert body["model"] == {"kind": "alias", "alias": "fast", "tag": None, "provider": None, "model": None}


def test_list_is_a_bare_array_of_summaries_one_per_agent_with_the_newest_version(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user, display_name="First")
    create(user, id=spec["id"], version="2", display_name="Second")

    listed = user.client.get("/agents").json()
    mine = [row for row in listed if row["id"] == spec["id"]]
    assert mine == [
        {
            "id": spec["id"],
            "version": "2",
            "display_name": "Second",
            "role": "assistant",
            "source": "user",
            "created_by": str(user.id),
            "working_group_id": None,
        }
    ]
    assert all(set(row) == SUMMARY_KEYS for row in listed)


def test_a_second_version_keeps_both_rows_and_reads_resolve_to_the_newest(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user, version="2.0")
    create(user, id=spec["id"], version="1.5", system_prompt="newer")  # newest = created last, not largest

    assert user.client.get(f"/agents/{spec['id']}").json()["version"] == "1.5"
    versions = user.client.get(f"/agents/{spec['id']}/versions").json()
    assert [(v["version"], v["retired"]) for v in versions["data"]] == [("1.5", False), ("2.0", False)]
    assert versions["next_cursor"] is None


def test_retiring_the_newest_version_makes_reads_resolve_to_the_previous_one(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user)
    create(user, id=spec["id"], version="2")

    retired = user.client.post(f"/agents/{spec['id']}/versions/2/retire")
    assert retired.status_code == 200
    assert retired.json()["retired"] is True and retired.json()["retired_at"]

    assert user.client.get(f"/agents/{spec['id']}").json()["version"] == "1"
    assert [r["version"] for r in user.client.get("/agents").json() if r["id"] == spec["id"]] == ["1"]
    versions = user.client.get(f"/agents/{spec['id']}/versions").json()["data"]
    assert [(v["version"], v["retired"]) for v in versions] == [("2", True), ("1", False)]


def test_retiring_every_version_hides_the_agent_but_keeps_its_version_history(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user)
    assert user.client.post(f"/agents/{spec['id']}/versions/1/retire").status_code == 200

    nested_error(user.client.get(f"/agents/{spec['id']}"), 404, "NOT_FOUND")
    assert spec["id"] not in {row["id"] for row in user.client.get("/agents").json()}
    assert user.client.get(f"/agents/{spec['id']}/versions").json()["data"][0]["retired"] is True


def test_retiring_an_already_retired_version_answers_it_again_unchanged(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user)
    first = user.client.post(f"/agents/{spec['id']}/versions/1/retire").json()
    second = user.client.post(f"/agents/{spec['id']}/versions/1/retire")
    assert second.status_code == 200
    assert second.json() == first


def test_retire_of_an_unknown_version_is_404_and_changes_nothing(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user)
    nested_error(user.client.post(f"/agents/{spec['id']}/versions/9/retire"), 404, "NOT_FOUND")
    nested_error(user.client.post("/agents/no-such-agent/versions/1/retire"), 404, "NOT_FOUND")
    assert user.client.get(f"/agents/{spec['id']}").json()["version"] == "1"


def test_publishing_an_existing_id_and_version_is_409_conflict_and_keeps_the_first(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user, system_prompt="original")
    again = user.client.post("/agents", json={**spec, "system_prompt": "other"})
    error = nested_error(again, 409, "CONFLICT")
    assert error["details"] == {"id": spec["id"], "version": "1"}
    assert user.client.get(f"/agents/{spec['id']}").json()["system_prompt"] == "original"
    assert len(user.client.get(f"/agents/{spec['id']}/versions").json()["data"]) == 1


def test_versions_list_pages_newest_first_with_an_opaque_cursor(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user)
    for version in ("2", "3"):
        create(user, id=spec["id"], version=version)
    first = user.client.get(f"/agents/{spec['id']}/versions", params={"limit": 2}).json()
    assert [v["version"] for v in first["data"]] == ["3", "2"]
    second = user.client.get(
        f"/agents/{spec['id']}/versions", params={"limit": 2, "cursor": first["next_cursor"]}
    ).json()
    assert [v["version"] for v in second["data"]] == ["1"] and second["next_cursor"] is None
    for bad in ({"limit": 0}, {"limit": 501}, {"cursor": "not-a-cursor"}):
        nested_error(user.client.get(f"/agents/{spec['id']}/versions", params=bad), 400, "VALIDATION_FAILED")


BAD_SPECS: list[tuple[str, dict[str, Any], str]] = [
    ("missing display_name", {"display_name": None}, "display_name"),
    ("missing system_prompt", {"system_prompt": None}, "system_prompt"),
    ("unknown source", {"source": "robot"}, "source"),
    ("unknown reasoning_effort", {"reasoning_effort": "extreme"}, "reasoning_effort"),
    ("unknown model kind", {"model": {"kind": "fastest"}}, "model.kind"),
    ("max_tokens as a string", {"max_tokens": "4000"}, "max_tokens"),
    ("max_tokens zero", {"max_tokens": 0}, "max_tokens"),
    ("memory_enabled as a string", {"memory_enabled": "yes"}, "memory_enabled"),
    ("economy_id not a uuid", {"economy_id": "default"}, "economy_id"),
    ("id with a slash", {"id": "a/b"}, "id"),
    ("id too long for usage records", {"id": "a" * 65}, "id"),
    ("skill without prompt_addendum", {"skills": [{"name": "x"}]}, "skills.0.prompt_addendum"),
    ("expertise not a list", {"expertise": "python"}, "expertise"),
    ("unknown field", {"colour": "blue"}, "colour"),
]


@pytest.mark.parametrize(("case", "change", "field"), BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_an_invalid_field_is_400_naming_it_and_stores_nothing(
    gateway: Gateway, case: str, change: dict[str, Any], field: str
) -> None:
    user = gateway.user()
    spec = make_spec()
    spec.update(change)
    spec = {key: value for key, value in spec.items() if value is not None}
    error = nested_error(user.client.post("/agents", json=spec), 400, "VALIDATION_FAILED")
    assert field in {problem["field"] for problem in error["details"]["problems"]}
    # Nothing stored: the caller still sees exactly what a brand-new user sees (the seed agents).
    assert user.client.get("/agents").json() == gateway.user().client.get("/agents").json()


def test_a_malformed_json_body_is_400_in_the_nested_envelope(gateway: Gateway) -> None:
    user = gateway.user()
    response = user.client.post("/agents", content=b'{"id": ', headers={"content-type": "application/json"})
    nested_error(response, 400, "BAD_REQUEST")


REGISTRY_OPERATIONS = [
    ("GET", "/agents", None),
    ("POST", "/agents", make_spec()),
    ("POST", "/agents/validate", make_spec()),
    ("POST", "/agents/discover", {"query": "research"}),
    ("GET", "/agents/researcher", None),
    ("GET", "/agents/researcher/versions", None),
    ("POST", "/agents/researcher/versions/1/retire", None),
]


@pytest.mark.parametrize(("method", "path", "body"), REGISTRY_OPERATIONS)
@pytest.mark.parametrize("authorization", [None, "Bearer not-a-jwt"])
def test_every_registry_operation_answers_401_in_the_nested_envelope(
    gateway: Gateway, method: str, path: str, body: Any, authorization: str | None
) -> None:
    headers = {"authorization": authorization} if authorization else {}
    response = gateway.client().request(method, path, json=body, headers=headers)
    nested_error(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_an_expired_token_is_401_in_the_nested_envelope(gateway: Gateway) -> None:
    token = gateway.tokens.mint(ttl_seconds=-600)
    error = nested_error(gateway.client(token).get("/agents"), 401, "UNAUTHORIZED")
    assert "expired" in error["message"]


def test_a_viewer_reads_and_discovers_but_may_not_publish_or_retire(gateway: Gateway) -> None:
    viewer = gateway.user(role="Viewer")
    assert viewer.client.get("/agents").status_code == 200
    assert viewer.client.get("/agents/researcher").status_code == 200
    assert viewer.client.post("/agents/discover", json={"query": "research"}).status_code == 200
    nested_error(viewer.client.post("/agents", json=make_spec()), 403, "FORBIDDEN")
    nested_error(viewer.client.post("/agents/researcher/versions/1/retire"), 403, "FORBIDDEN")


def test_a_read_only_delegation_may_not_publish(gateway: Gateway) -> None:
    user = gateway.user()
    token = gateway.tokens.delegation(sub=user.id, room_id=uuid.uuid4(), scope=["read"])
    nested_error(gateway.client(token).post("/agents", json=make_spec()), 403, "FORBIDDEN")


def test_openapi_names_the_seed_operation_ids_under_the_agents_tag(gateway: Gateway) -> None:
    spec = gateway.client().get("/openapi.json").json()
    operations = {
        op["operationId"]: op
        for path, item in spec["paths"].items()
        if path.startswith("/agents")
        for op in item.values()
    }
    assert set(operations) == {
        "listAgents_Agents",
        "createAgent_Agents",
        "discoverAgents_Agents",
        "getAgent_Agents",
        "validateAgent_Agents",
        "retireAgentVersion_Agents",
        "listAgentVersions_Agents",
    }
    assert all(op["tags"] == ["Agents"] for op in operations.values())
    assert "201" in operations["createAgent_Agents"]["responses"]
    assert {"400", "401", "409", "422"} <= set(operations["createAgent_Agents"]["responses"])


def test_concurrent_publishes_of_one_id_and_version_store_exactly_one(gateway: Gateway) -> None:
    from concurrent.futures import ThreadPoolExecutor

    user = gateway.user()
    spec = make_spec()
    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = sorted(pool.map(lambda _: user.client.post("/agents", json=spec).status_code, range(6)))
    assert statuses == [201, 409, 409, 409, 409, 409]
    assert len(user.client.get(f"/agents/{spec['id']}/versions").json()["data"]) == 1


def test_a_publish_retried_with_its_idempotency_key_answers_the_first_201(gateway: Gateway) -> None:
    user = gateway.user()
    spec = make_spec()
    headers = {"Idempotency-Key": f"publish-{uuid.uuid4()}"}
    first = user.client.post("/agents", json=spec, headers=headers)
    again = user.client.post("/agents", json=spec, headers=headers)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json() == {"id": spec["id"], "version": "1"}
    assert user.client.post("/agents", json=spec).status_code == 409  # without the key: a second publish
