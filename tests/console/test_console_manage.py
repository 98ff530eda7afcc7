"""The console's management and reach (SPEC §18, issue 35): people by email, only the economies a user
may read, limits/economies/rooms changed from the page, and a layout that works on a 390 px phone."""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import ECONOMY_NAME, ECONOMY_SLUG, ROOM_NAME, Watched, World
from tests.console.test_console_flows import VIEWS, open_view, row, sign_in

PHONE = {"width": 390, "height": 844}


def test_an_admin_sees_people_by_email_in_usage_and_limits(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.admin)
    page.get_by_label("Economy").select_option(label=f"{ECONOMY_NAME} ({ECONOMY_SLUG})")
    per_user = page.get_by_role("img", name=re.compile("^Cost per user:"))
    records = page.get_by_role("table", name=re.compile("^Usage records"))
    for who in (world.alice, world.bob):
        expect(per_user).to_have_attribute("aria-label", re.compile(re.escape(who.email)))
        expect(records).to_contain_text(who.email)
        assert str(who.id)[:8] not in (per_user.get_attribute("aria-label") or "")
    page.get_by_label("Filter records").fill(world.bob.email)
    expect(records.get_by_role("row")).to_have_count(1 + 1)

    open_view(page, "Limits")
    expect(row(page, f"user {world.alice.email}")).to_contain_text("requests per day")


def test_a_member_is_offered_only_the_economies_whose_usage_they_may_read(
    watched: Watched, world: World
) -> None:
    # bob takes part in the research economy as a member: its usage is not his to read.
    page = sign_in(watched, world.bob)
    economy = page.get_by_label("Economy")
    expect(economy.locator("option")).to_have_text(["My usage (all economies)"])
    expect(economy).to_have_value("mine")
    expect(page.get_by_role("table", name=re.compile("^Usage records"))).to_be_visible()
    expect(page.get_by_role("alert")).to_have_count(0)

    # alice owns it: it is offered, and reading it works.
    page.get_by_role("button", name="Sign out").click()
    page = sign_in(watched, world.alice)
    options = page.get_by_label("Economy").locator("option")
    expect(options).to_have_text(["My usage (all economies)", f"{ECONOMY_NAME} ({ECONOMY_SLUG})"])


def test_limits_are_created_edited_and_deleted_by_an_economy_owner(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "Limits")
    page.get_by_role("button", name="New limit").click()
    form = page.get_by_role("form", name="New limit")
    form.get_by_label("Subject type").select_option("user")
    form.get_by_label("Subject", exact=True).fill(str(world.bob.id))
    form.get_by_label("Narrowed to").select_option(label=f"{ECONOMY_NAME} ({ECONOMY_SLUG})")
    form.get_by_label("Metric").select_option("tokens")
    form.get_by_label("Window").select_option("hour")
    form.get_by_label("Amount").fill("12345")
    form.get_by_role("button", name="Save limit").click()
    title = f"user {world.bob.email} in {ECONOMY_SLUG} tokens per hour"
    expect(row(page, f"user {world.bob.email} in {ECONOMY_SLUG}")).to_contain_text("12,345 tokens")
    on_bob = {"subject_type": "user", "subject_id": str(world.bob.id)}
    listed = world.client("admin").get("/limits", params=on_bob)
    (created,) = listed.json()["data"]
    assert (created["metric"], created["window"], created["amount"]) == ("tokens", "hour", "12345")
    assert created["economy_id"] == world.economy["id"]

    page.get_by_role("button", name=f"Edit {title}").click()
    page.get_by_role("form", name=f"Edit {title}").get_by_label(re.compile("^Amount")).fill("999")
    page.get_by_role("button", name="Save limit").click()
    expect(row(page, f"user {world.bob.email} in {ECONOMY_SLUG}")).to_contain_text("999 tokens")
    assert world.client("admin").get(f"/limits/{created['id']}").json()["amount"] == "999"

    page.get_by_role("button", name=f"Delete {title}").click()
    page.get_by_role("button", name=f"Confirm: Delete {title}").click()
    expect(row(page, f"user {world.bob.email} in {ECONOMY_SLUG}")).to_have_count(0)
    assert world.client("admin").get(f"/limits/{created['id']}").status_code == 404


def test_an_owner_is_offered_no_edit_or_delete_for_a_limit_an_admin_set(
    watched: Watched, world: World
) -> None:
    # The admin set the research economy's monthly cost limit; alice owns the economy but may not change it.
    edit = re.compile(rf"^Edit economy .*{re.escape(ECONOMY_SLUG)}.*cost per month")
    delete = re.compile(rf"^Delete economy .*{re.escape(ECONOMY_SLUG)}.*cost per month")
    page = sign_in(watched, world.admin)
    open_view(page, "Limits")
    expect(page.get_by_role("button", name=edit)).to_have_count(1)
    page.get_by_role("button", name="Sign out").click()

    page = sign_in(watched, world.alice)
    open_view(page, "Limits")
    expect(page.get_by_text("cost per month").first).to_be_visible()
    expect(page.get_by_role("button", name=edit)).to_have_count(0)
    expect(page.get_by_role("button", name=delete)).to_have_count(0)


def test_a_cost_limit_is_typed_in_currency_units_and_a_bad_amount_stores_nothing(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.alice)  # the room's owner
    open_view(page, "Limits")
    before = world.client("admin").get("/limits", params={"limit": 500}).json()["data"]
    page.get_by_role("button", name="New limit").click()
    form = page.get_by_role("form", name="New limit")
    form.get_by_label("Subject type").select_option("room")
    form.get_by_label("Subject", exact=True).select_option(label=ROOM_NAME)
    form.get_by_label("Metric").select_option("cost")
    form.get_by_label("Window").select_option("month")
    form.get_by_label("Amount").fill("2.5 dollars")
    form.get_by_role("button", name="Save limit").click()
    expect(form.get_by_role("alert")).to_contain_text("Amount")
    assert world.client("admin").get("/limits", params={"limit": 500}).json()["data"] == before

    form.get_by_label("Amount").fill("2.5")
    form.get_by_role("button", name="Save limit").click()
    expect(row(page, f"room {ROOM_NAME}").filter(has_text="cost per month")).to_contain_text("2.50")
    on_room = {"subject_type": "room", "subject_id": world.room_id}
    listed = world.client("admin").get("/limits", params=on_room)
    (created,) = [limit for limit in listed.json()["data"] if limit["metric"] == "cost"]
    assert created["amount"] == "2500000000"
    assert world.client("admin").delete(f"/limits/{created['id']}").status_code == 204


def test_an_admin_deletes_an_unused_economy_and_is_told_why_a_metered_one_stays(
    watched: Watched, world: World
) -> None:
    slug = f"spare-{uuid.uuid4().hex[:8]}"
    created = world.client("admin").post("/economies", json={"slug": slug, "name": "Spare"})
    assert created.status_code == 201, created.text
    page = sign_in(watched, world.admin)
    open_view(page, "Economies")
    page.get_by_role("button", name=f"Delete {slug}", exact=True).click()
    page.get_by_role("button", name=f"Confirm: Delete {slug}", exact=True).click()
    expect(page.get_by_role("cell", name=slug, exact=True)).to_have_count(0)
    assert world.client("admin").get(f"/economies/{created.json()['id']}").status_code == 404

    # The research economy has usage: the API keeps it (409) and the page says why.
    watched.expect_failure(f"/economies/{world.economy['id']}")
    page.get_by_role("button", name=f"Delete {ECONOMY_SLUG}", exact=True).click()
    page.get_by_role("button", name=f"Confirm: Delete {ECONOMY_SLUG}", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("usage records")
    assert world.client("admin").get(f"/economies/{ECONOMY_SLUG}").status_code == 200


def test_an_admin_creates_and_edits_an_economy_and_its_participants_and_others_are_not_offered_it(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.admin)
    open_view(page, "Economies")
    slug = f"console-{uuid.uuid4().hex[:6]}"
    page.get_by_role("button", name="New economy").click()
    form = page.get_by_role("form", name="New economy")
    form.get_by_label("Slug").fill(slug)
    form.get_by_label("Economy name").fill("Console economy")
    form.get_by_label("Currency").fill("EUR")
    form.get_by_label("Markup (basis points)").fill("150")
    form.get_by_label("Monthly budget").fill("40")
    form.get_by_role("button", name="Save economy").click()
    expect(row(page, slug)).to_contain_text("40.00 EUR")
    created = world.client("admin").get(f"/economies/{slug}").json()
    assert (created["name"], created["currency"], created["markup_bps"], created["budget"]) == (
        "Console economy",
        "EUR",
        150,
        "40000000000",
    )

    page.get_by_role("button", name=f"Edit {slug}").click()
    form = page.get_by_role("form", name=f"Edit {slug}")
    expect(form.get_by_label("Monthly budget")).to_have_value("40")
    form.get_by_label("Economy name").fill("Renamed economy")
    form.get_by_label("Monthly budget").fill("")
    form.get_by_role("button", name="Save economy").click()
    expect(row(page, slug)).to_contain_text("Renamed economy")
    expect(row(page, slug)).to_contain_text("none")
    changed = world.client("admin").get(f"/economies/{slug}").json()
    assert (changed["name"], changed["budget"]) == ("Renamed economy", None)

    # Its participants, by email: bob added as an owner, then removed.
    page.get_by_role("link", name="Renamed economy").click()
    page.get_by_label("User ID").fill(str(world.bob.id))
    page.get_by_label("Participant role").select_option("owner")
    page.get_by_role("button", name="Add participant").click()
    participants = page.get_by_role("table", name="Participants of Renamed economy")
    expect(row(participants, world.bob.email)).to_contain_text("owner")
    listed = world.client("admin").get(f"/economies/{slug}/participants").json()["data"]
    assert [(p["user_id"], p["role"]) for p in listed] == [(str(world.bob.id), "owner")]
    page.get_by_role("button", name=f"Remove {world.bob.email}").click()
    page.get_by_role("button", name=f"Confirm: Remove {world.bob.email}").click()
    expect(participants).to_have_count(0)
    assert world.client("admin").get(f"/economies/{slug}/participants").json()["data"] == []

    page.get_by_role("button", name="Sign out").click()
    page = sign_in(watched, world.alice)
    expect(page.get_by_role("navigation").get_by_role("link", name="Economies")).to_have_count(0)
    page.goto(f"{watched.origin}/console#/economies")
    expect(page.get_by_role("heading", name="Usage", level=2)).to_be_visible()


def test_a_room_owner_renames_and_deletes_a_room(watched: Watched, world: World) -> None:
    name = f"Temporary {uuid.uuid4().hex[:6]}"
    room = world.client("alice").post("/working-groups", json={"name": name}).json()
    page = sign_in(watched, world.alice)
    open_view(page, "Rooms")
    page.get_by_role("link", name=name).click()
    page.get_by_role("button", name=f"Edit {name}").click()
    form = page.get_by_role("form", name=f"Edit {name}")
    form.get_by_label("Room name").fill(f"{name} renamed")
    form.get_by_label("Description").fill("for a while")
    form.get_by_role("button", name="Save room").click()
    expect(page.get_by_role("heading", name=f"{name} renamed")).to_be_visible()
    changed = world.client("alice").get(f"/working-groups/{room['id']}").json()
    assert (changed["name"], changed["description"]) == (f"{name} renamed", "for a while")

    page.get_by_role("button", name=f"Delete {name} renamed").click()
    page.get_by_role("button", name=f"Confirm: Delete {name} renamed").click()
    expect(page.get_by_role("table", name="Rooms")).to_be_visible()
    expect(row(page, name)).to_have_count(0)
    assert world.client("alice").get(f"/working-groups/{room['id']}").status_code == 404


def test_a_room_member_is_offered_no_room_edit_or_delete(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.bob)
    open_view(page, "Rooms")
    page.get_by_role("link", name=ROOM_NAME).click()
    expect(page.get_by_role("table", name=f"Members of {ROOM_NAME}")).to_be_visible()
    for name in (f"Edit {ROOM_NAME}", f"Delete {ROOM_NAME}"):
        expect(page.get_by_role("button", name=name)).to_have_count(0)


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def inside_the_screen(locator: Any) -> None:
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box


def test_every_view_fits_a_390_px_phone(watched: Watched, world: World) -> None:
    page = watched.page
    page.set_viewport_size(PHONE)
    sign_in(watched, world.admin)
    inside_the_screen(page.get_by_role("button", name="Sign out"))
    inside_the_screen(page.get_by_text(f"Signed in as {world.admin.email}"))
    page.get_by_label("Economy").select_option(label=f"{ECONOMY_NAME} ({ECONOMY_SLUG})")
    for chart in ("Cost per day", "Cost per model", "Cost per user"):
        inside_the_screen(page.get_by_role("img", name=re.compile(f"^{chart}:")))
    no_sideways_scroll(page)
    for name in (*VIEWS, "Economies"):
        open_view(page, name)
        inside_the_screen(page.get_by_role("navigation").get_by_role("link", name=name, exact=True))
        no_sideways_scroll(page)
    page.get_by_role("button", name="Sign out").click()
    sign_in(watched, world.alice)  # a room owner: the members' table and its forms
    open_view(page, "Rooms")
    page.get_by_role("link", name=ROOM_NAME).click()
    expect(page.get_by_role("table", name=f"Members of {ROOM_NAME}")).to_be_visible()
    no_sideways_scroll(page)
    open_view(page, "Credentials")
    page.get_by_role("button", name="Add credential").click()
    no_sideways_scroll(page)
