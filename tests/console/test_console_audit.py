"""The console's Audit view (SPEC §22) in Chromium: what the signed-in user may see of the trail, filtered."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import expect

from tests.console.conftest import ECONOMY_NAME, ROOM_NAME, Watched, World
from tests.console.test_console_flows import open_view, sign_in


def test_a_room_owner_sees_the_rooms_changes_and_filters_them_by_action(
    watched: Watched, world: World
) -> None:
    renamed = f"{ROOM_NAME} {uuid.uuid4().hex[:4]}"
    client = world.client("alice")
    assert client.patch(f"/working-groups/{world.room_id}", json={"name": renamed}).status_code == 200
    assert client.patch(f"/working-groups/{world.room_id}", json={"name": ROOM_NAME}).status_code == 200
    page = sign_in(watched, world.alice)
    open_view(page, "Audit")
    events = page.get_by_role("table", name="Audit events")
    expect(events).to_contain_text("room.create")
    expect(events).to_contain_text(f"name: {ROOM_NAME} → {renamed}")
    page.get_by_label("Action").fill("room.update")
    page.get_by_role("button", name="Filter").click()
    expect(events.get_by_role("row")).to_have_count(1 + 2)
    for cells in events.get_by_role("row").all()[1:]:
        expect(cells).to_contain_text("room.update")
    expect(events).not_to_contain_text(ECONOMY_NAME)


def test_an_admin_sees_every_change_and_a_user_with_no_rooms_or_economies_sees_none(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.admin)
    open_view(page, "Audit")
    events = page.get_by_role("table", name="Audit events")
    expect(events).to_contain_text("economy.create")
    expect(events).to_contain_text(re.compile(r"credential\.create"))
    expect(page.get_by_role("button", name=re.compile("edit|delete", re.IGNORECASE))).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    page = sign_in(watched, world.bob)
    open_view(page, "Audit")
    expect(page.get_by_text("No audit events you can see.")).to_be_visible()
