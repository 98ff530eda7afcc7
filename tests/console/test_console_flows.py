"""The web console (SPEC §18) in Chromium against a running gateway, driven by accessible names."""

from __future__ import annotations

import csv
import re
import uuid
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.auth.conftest import Account
from tests.console.conftest import AGENT_ID, ECONOMY_NAME, ECONOMY_SLUG, ROOM_NAME, Watched, World
from tests.support.recorder import RECORDER

VIEWS = ("Usage", "Limits", "Credentials", "API keys", "Agents", "Rooms", "Audit")
API_KEY = re.compile(r"svc_api_[0-9A-Za-z]{49}")
WRITE_WORDS = re.compile(
    r"\b(add|new|create|generate|delete|remove|rotate|revoke|edit|invite|retire)\b", re.IGNORECASE
)


def nano_text(amount: str, currency: str = "") -> str:
    """What the console shows for an amount in nano-units: exact, at least two decimals."""
    whole, fraction = divmod(int(amount), 10**9)
    digits = f"{fraction:09d}".rstrip("0").ljust(2, "0")
    text = f"{whole:,}.{digits}"
    return f"{text} {currency}" if currency else text


def sign_in(watched: Watched, account: Account) -> Any:
    page = watched.page
    page.goto(f"{watched.origin}/console")
    page.get_by_label("Email").fill(account.email)
    page.get_by_label("Password").fill(account.password)
    page.get_by_label("Password").press("Enter")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.get_by_role("heading", name="Usage", level=2)).to_be_visible()
    return page


def open_view(page: Any, name: str) -> None:
    page.get_by_role("navigation").get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, exact=True, level=2)).to_be_visible()
    expect(page.locator(".loading")).to_have_count(0)


def storage_text(page: Any) -> str:
    return str(page.evaluate("() => JSON.stringify([{...sessionStorage}, {...localStorage}])"))


def field_values(page: Any) -> str:
    script = "() => [...document.querySelectorAll('input, textarea')].map(e => e.value).join(' ')"
    return str(page.evaluate(script))


def row(page: Any, text: str) -> Any:
    return page.get_by_role("row").filter(has_text=text)


def test_sign_in_by_password_shows_an_alert_on_failure_then_the_navigation(
    watched: Watched, world: World
) -> None:
    page = watched.page
    page.goto(f"{watched.origin}/console")
    watched.expect_failure("/auth/login")
    page.get_by_label("Email").fill(world.alice.email)
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("invalid email or password")
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)

    sign_in(watched, world.alice)
    navigation = page.get_by_role("navigation")
    for name in VIEWS:
        expect(navigation.get_by_role("link", name=name, exact=True)).to_be_visible()
    expect(page.get_by_text(f"Signed in as {world.alice.email} (User)")).to_be_visible()
    assert world.alice.password not in page.content() + field_values(page) + storage_text(page)

    page.reload()  # the tab stays signed in
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Email")).to_be_visible()
    assert storage_text(page) == "[{},{}]"


def test_sign_in_with_an_api_key_acts_as_its_account_and_offers_no_key_creation(
    watched: Watched, world: World
) -> None:
    page = watched.page
    page.goto(f"{watched.origin}/console")
    page.get_by_label("API key").fill(world.alice_key["api_key"])
    page.get_by_label("API key").press("Enter")
    expect(page.get_by_text(f"Signed in as {world.alice.email} (User, with an API key)")).to_be_visible()
    assert world.alice_key["api_key"] not in page.content() + field_values(page) + storage_text(page)
    open_view(page, "API keys")
    expect(page.get_by_text("an API key cannot create keys")).to_be_visible()
    expect(page.get_by_role("button", name="Create")).to_have_count(0)


def test_usage_charts_the_economy_and_tables_its_records_and_exports_every_one(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.admin)
    page.get_by_label("Economy").select_option(label=f"{ECONOMY_NAME} ({ECONOMY_SLUG})")
    summary = (
        world.client("admin")
        .get(f"/economies/{ECONOMY_SLUG}/usage/summary", params={"group_by": "model"})
        .json()
    )
    records = world.client("admin").get(f"/economies/{ECONOMY_SLUG}/usage").json()["data"]
    assert summary["totals"]["requests"] == len(records) == 4

    totals = page.get_by_role("definition").first
    expect(totals).to_have_text(nano_text(summary["totals"]["cost"], "USD"))
    for chart in ("Cost per day", "Cost per model", "Cost per user"):
        expect(page.get_by_role("img", name=re.compile(f"^{chart}:"))).to_be_visible()
    models = page.get_by_role("img", name=re.compile("^Cost per model:"))
    expect(models).to_have_attribute("aria-label", re.compile("openai/gpt-4o-mini .* USD"))
    records_table = page.get_by_role("table", name=re.compile("^Usage records"))
    expect(records_table.get_by_role("row")).to_have_count(1 + 4)
    expect(records_table).to_contain_text("openai/text-embedding-3-small")

    page.get_by_label("Measure").select_option("Tokens")
    expect(page.get_by_role("img", name=re.compile("^Tokens per user:"))).to_be_visible()
    page.get_by_label("Filter records").fill("embedding")
    expect(records_table.get_by_role("row")).to_have_count(1 + 1)

    with page.expect_download() as caught:
        page.get_by_role("button", name="Export").click()
    with open(caught.value.path(), encoding="utf-8", newline="") as exported_file:
        exported = list(csv.DictReader(exported_file))
    assert sorted(r["id"] for r in exported) == sorted(r["id"] for r in records)


def test_an_economy_owner_sees_their_own_usage_first_and_their_economy_on_choosing_it(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.alice)
    expect(page.get_by_label("Economy")).to_have_value("mine")
    mine = world.client("alice").get("/usage/me").json()["data"]
    records_table = page.get_by_role("table", name=re.compile("^Usage records"))
    expect(records_table.get_by_role("row")).to_have_count(1 + len(mine))
    page.get_by_label("Economy").select_option(label=f"{ECONOMY_NAME} ({ECONOMY_SLUG})")
    expect(page.get_by_role("img", name=re.compile("^Cost per user:"))).to_have_attribute(
        "aria-label", re.compile(r"you \(")
    )
    expect(records_table.get_by_role("row")).to_have_count(1 + 4)


def test_limits_show_amount_used_remaining_and_reset_time(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "Limits")
    admin = world.client("admin")
    for limit_id in world.limit_ids:
        limit = admin.get(f"/limits/{limit_id}").json()
        status = admin.get(f"/limits/{limit_id}/status").json()
        if limit["metric"] == "cost":
            subject, amount = f"economy {ECONOMY_SLUG}", lambda v: nano_text(v, "USD")
        else:
            subject, amount = "you", lambda v: f"{int(v):,} requests"
        cells = row(page, f"{limit['metric']} per {limit['window']}").filter(has_text=subject)
        expect(cells).to_have_count(1)
        texts = [t.strip() for t in cells.get_by_role("cell").all_inner_texts()]
        assert texts[1] == amount(limit["amount"])
        assert texts[2] == amount(status["used"])
        assert texts[4] == amount(status["remaining"])
        assert texts[5].startswith(status["resets_at"][:10]) and texts[5].endswith("UTC")
        assert int(status["used"]) > 0


def test_credentials_add_rotate_delete_and_a_secret_never_stays_in_the_page(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "Credentials")
    used = world.credentials["alice-openai"]
    expect(row(page, "alice-openai")).to_contain_text(f"…{used['secret_hint']}")
    expect(row(page, "alice-openai")).to_contain_text(used["last_used_at"][:10])
    expect(row(page, "spare")).to_contain_text("Never")
    expect(page.get_by_role("columnheader", name="Last used")).to_be_visible()

    secret = RECORDER.remember_secret(f"sk-added-{uuid.uuid4().hex}")
    page.get_by_role("button", name="Add credential").click()
    # The provider is chosen from the kinds GET /providers lists; nothing else can be entered.
    kinds = [p["kind"] for p in world.client("alice").get("/providers", params={"limit": 500}).json()["data"]]
    provider = page.get_by_label("Provider")
    expect(provider).to_have_js_property("tagName", "SELECT")
    expect(provider.locator("option")).to_have_text(kinds)
    page.get_by_label("Provider").select_option("openai")
    page.get_by_label("Label").fill("console-added")
    page.get_by_label("Base URL").fill(f"{world.gateway.url}/never-called/v1")
    page.get_by_label("Secret", exact=True).fill(secret)
    page.get_by_role("button", name="Save credential").click()
    expect(row(page, "console-added")).to_contain_text(f"…{secret[-4:]}")
    assert secret not in page.content() + field_values(page) + storage_text(page)

    rotated = RECORDER.remember_secret(f"sk-rotated-{uuid.uuid4().hex}")
    page.get_by_role("button", name="Rotate console-added").click()
    page.get_by_label("New secret for console-added").fill(rotated)
    page.get_by_role("button", name="Save secret").click()
    expect(row(page, "console-added")).to_contain_text(f"…{rotated[-4:]}")
    assert rotated not in page.content() + field_values(page) + storage_text(page)
    listed = world.client("alice").get("/llm-credentials").json()["data"]
    (added,) = [c for c in listed if c["label"] == "console-added"]
    assert added["secret_hint"] == rotated[-4:]

    page.get_by_role("button", name="Delete console-added").click()
    page.get_by_role("button", name="Confirm: Delete console-added").click()
    expect(row(page, "console-added")).to_have_count(0)
    assert world.client("alice").get(f"/llm-credentials/{added['id']}").status_code == 404


def test_a_new_api_key_is_shown_once_never_stored_and_revoke_ends_it(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "API keys")
    expect(row(page, "ci-bot")).to_contain_text(world.alice_key["key_prefix"])
    page.get_by_label("Name").fill("console-key")
    page.get_by_role("button", name="Create").click()
    shown = page.get_by_role("region", name="New API key")
    expect(shown).to_be_visible()
    key = API_KEY.search(shown.inner_text())
    assert key is not None
    RECORDER.remember_secret(key.group(0))
    assert key.group(0) not in storage_text(page)
    exchange = {"api_key": key.group(0)}
    with httpx.Client(base_url=world.gateway.url) as plain:  # unrecorded: the answer carries tokens
        assert plain.post("/auth/api-key", json=exchange).status_code == 200

    open_view(page, "Usage")
    open_view(page, "API keys")
    assert key.group(0) not in page.content()
    page.reload()
    expect(page.get_by_role("heading", name="API keys", level=2)).to_be_visible()
    expect(row(page, "console-key")).to_be_visible()
    assert key.group(0) not in page.content() + storage_text(page)

    page.get_by_role("button", name="Revoke console-key").click()
    page.get_by_role("button", name="Confirm: Revoke console-key").click()
    expect(row(page, "console-key")).to_have_count(0)
    with httpx.Client(base_url=world.gateway.url) as plain:
        assert plain.post("/auth/api-key", json=exchange).status_code == 401


def test_agents_open_to_their_versions_and_a_version_retires(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "Agents")
    expect(row(page, AGENT_ID)).to_contain_text("2")
    page.get_by_role("link", name="Helper").click()
    versions = page.get_by_role("table", name=f"Versions of {AGENT_ID}")
    expect(versions.get_by_role("row")).to_have_count(1 + 2)
    page.get_by_role("button", name="Retire version 1").click()
    page.get_by_role("button", name="Confirm: Retire version 1").click()
    expect(row(versions, "Retired")).to_have_count(1)
    listed = world.client("alice").get(f"/agents/{AGENT_ID}/versions").json()["data"]
    assert {v["version"]: v["retired"] for v in listed} == {"1": True, "2": False}


def test_rooms_open_to_their_members_and_an_owner_adds_and_removes_one(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.alice)
    open_view(page, "Rooms")
    expect(row(page, ROOM_NAME)).to_contain_text("owner")
    page.get_by_role("link", name=ROOM_NAME).click()
    members = page.get_by_role("table", name=f"Members of {ROOM_NAME}")
    # People by email, never by id (the caller knows their fellow members).
    for who, role in ((world.alice, "owner"), (world.bob, "member"), (world.viewer, "viewer")):
        expect(row(members, who.email)).to_contain_text(role)
        expect(members).not_to_contain_text(str(who.id)[:8])
    expect(row(members, world.alice.email)).to_contain_text("you")

    newcomer = str(uuid.uuid4())
    page.get_by_label("User ID").fill(newcomer)
    page.get_by_label("Role").select_option("manager")
    page.get_by_role("button", name="Add member").click()
    expect(row(members, newcomer)).to_contain_text("manager")
    page.get_by_role("button", name=f"Remove {newcomer[:8]}").click()
    page.get_by_role("button", name=f"Confirm: Remove {newcomer[:8]}").click()
    expect(row(members, newcomer)).to_have_count(0)

    open_view(page, "Rooms")
    page.get_by_role("button", name="New room").click()
    page.get_by_label("Room name").fill("Console room")
    page.get_by_role("button", name="Save room").click()
    expect(page.get_by_role("heading", name="Console room")).to_be_visible()
    expect(page.get_by_role("table", name="Members of Console room")).to_contain_text("owner")


def test_a_viewer_sees_every_view_and_no_write_control(watched: Watched, world: World) -> None:
    page = sign_in(watched, world.viewer)

    def no_write_controls() -> None:
        for role in ("button", "link", "menuitem"):
            names = [n for n in page.get_by_role(role).all_inner_texts() if WRITE_WORDS.search(n)]
            assert names == [], (role, names)
            labels = page.get_by_role(role).evaluate_all(
                "els => els.map(e => e.getAttribute('aria-label') || '')"
            )
            assert [n for n in labels if WRITE_WORDS.search(n)] == [], (role, labels)

    for name in VIEWS:
        open_view(page, name)
        no_write_controls()
    open_view(page, "Credentials")
    expect(row(page, "room-openai")).to_be_visible()
    open_view(page, "Agents")
    page.get_by_role("link", name="Helper").click()
    expect(page.get_by_role("table", name=f"Versions of {AGENT_ID}")).to_be_visible()
    no_write_controls()
    open_view(page, "Rooms")
    page.get_by_role("link", name=ROOM_NAME).click()
    expect(page.get_by_role("table", name=f"Members of {ROOM_NAME}")).to_contain_text("viewer")
    no_write_controls()


SESSION = "switchboard.console.session"


def stored_session(page: Any) -> dict[str, str]:
    return dict(page.evaluate("key => JSON.parse(sessionStorage.getItem(key))", SESSION))


def tamper(page: Any, **fields: str) -> None:
    script = (
        "([key, fields]) => sessionStorage.setItem("
        "key, JSON.stringify({...JSON.parse(sessionStorage.getItem(key)), ...fields}))"
    )
    page.evaluate(script, [SESSION, fields])


def test_a_refused_access_token_is_refreshed_once_and_a_refused_refresh_signs_out(
    watched: Watched, world: World
) -> None:
    page = sign_in(watched, world.alice)
    before = stored_session(page)
    watched.expect_failure("/protected/jwt")
    watched.expect_failure("/auth/refresh")
    tamper(page, token="not.a.token")
    page.reload()
    expect(page.get_by_role("heading", name="Usage", level=2)).to_be_visible()
    after = stored_session(page)
    assert after["token"] not in (before["token"], "not.a.token")
    assert after["refresh_token"] != before["refresh_token"]  # single-use: the pair was rotated

    # The spent refresh token again: refused (and its family revoked), so the console signs out.
    tamper(page, token="not.a.token", refresh_token=before["refresh_token"])
    page.reload()
    expect(page.get_by_text("Your session has ended. Sign in again.")).to_be_visible()
    expect(page.get_by_label("Email")).to_be_visible()
    assert storage_text(page) == "[{},{}]"
