"""An economy's budget is its cost/month limit (SPEC §8, §13): created, changed and removed with it."""

from __future__ import annotations

import uuid
from typing import Any

from switchboard.limits.budgets import budget_limit_id
from tests.limits.conftest import CAPPED_BUDGET, count_limits, new_economy
from tests.support.gateway import Gateway, User


def budget_limits(admin: User, economy: str) -> list[dict[str, Any]]:
    response = admin.client.get("/limits", params={"subject_type": "economy", "subject_id": economy})
    assert response.status_code == 200, response.text
    return [item for item in response.json()["data"] if item["managed_by"] == "budget"]


def test_budget_limit_ids_are_those_the_migration_backfills() -> None:
    economy_id = uuid.uuid4()
    assert budget_limit_id(economy_id) == uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:budget:{economy_id}")


def test_an_economy_created_with_a_budget_has_its_cost_month_limit(admin: User) -> None:
    economy = new_economy(admin, budget="3000000000")
    (limit,) = budget_limits(admin, economy["slug"])
    assert limit | {"created_at": None} == {
        "id": str(budget_limit_id(uuid.UUID(economy["id"]))),
        "subject_type": "economy",
        "subject_id": economy["id"],
        "economy_id": None,
        "metric": "cost",
        "window": "month",
        "amount": "3000000000",
        "allow_unpriced": False,
        "managed_by": "budget",
        "created_by": None,
        "authority": "admin",
        "created_at": None,
    }
    status = admin.client.get(f"/limits/{limit['id']}/status").json()
    assert (status["used"], status["remaining"]) == ("0", "3000000000")


def test_changing_the_budget_changes_the_limit_and_removing_it_removes_the_limit(admin: User) -> None:
    economy = new_economy(admin)
    assert budget_limits(admin, economy["id"]) == []
    patched = admin.client.patch(f"/economies/{economy['id']}", json={"budget": "100"})
    assert patched.status_code == 200, patched.text
    (first,) = budget_limits(admin, economy["id"])
    admin.client.patch(f"/economies/{economy['id']}", json={"budget": "250"})
    (second,) = budget_limits(admin, economy["id"])
    assert (second["id"], second["amount"]) == (first["id"], "250")
    admin.client.patch(f"/economies/{economy['id']}", json={"name": "Renamed"})
    assert budget_limits(admin, economy["id"]) == [second]  # a change without `budget` leaves it
    removed = admin.client.patch(f"/economies/{economy['id']}", json={"budget": None})
    assert removed.status_code == 200 and removed.json()["budget"] is None
    assert budget_limits(admin, economy["id"]) == []
    assert admin.client.get(f"/limits/{first['id']}").status_code == 404


def test_a_budget_larger_than_a_limit_can_count_is_400_and_creates_nothing(
    limits_gateway: Gateway, admin: User
) -> None:
    before = count_limits(limits_gateway)
    slug = f"e-{uuid.uuid4().hex[:10]}"
    response = admin.client.post("/economies", json={"slug": slug, "name": "Huge", "budget": "9" * 20})
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_FAILED" and "budget" in response.json()["error"]
    assert admin.client.get(f"/economies/{slug}").status_code == 404
    assert count_limits(limits_gateway) == before


def test_a_config_economys_budget_is_its_limit(admin: User) -> None:
    (limit,) = budget_limits(admin, "capped")
    assert (limit["amount"], limit["managed_by"]) == (CAPPED_BUDGET, "budget")


def test_an_economy_owner_sees_the_budget_limit_but_changes_it_only_through_the_budget(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin, budget="500")
    owner = limits_gateway.user()
    admin.client.post(
        f"/economies/{economy['id']}/participants", json={"user_id": str(owner.id), "role": "owner"}
    )
    (limit,) = budget_limits(owner, economy["id"])
    refused = owner.client.patch(f"/limits/{limit['id']}", json={"amount": "1"})
    assert refused.status_code == 409
    assert "PATCH /economies" in refused.json()["error"]
