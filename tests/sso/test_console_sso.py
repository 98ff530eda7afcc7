"""The console's "Sign in with SSO" in Chromium, through the real provider's own login page (SPEC §24):
code + PKCE, the state and the session ticket used once, sign-out ending the session, and password
accounts still signing in beside it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.auth.conftest import make_account
from tests.sso.conftest import SsoSetup

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOOPBACK = re.compile(r"^https?://127\.0\.0\.1(:\d+)?/")


@pytest.fixture(scope="module")
def browser(sso: SsoSetup) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
    finally:
        playwright.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    # The provider's dev login page imports a web font: nothing may leave this machine.
    context.route(lambda url: not LOOPBACK.match(url), lambda route: route.abort())
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []


def sign_in_with_sso(page: Any, sso: SsoSetup, login: str | None) -> list[str]:
    """Through the provider's login form (`login` None: the provider still has a session and asks
    nothing); returns the callback URLs the browser was sent to."""
    callbacks: list[str] = []
    page.on("request", lambda r: callbacks.append(r.url) if "/auth/sso/callback" in r.url else None)
    page.goto(f"{sso.gateway.url}/console")
    page.get_by_role("link", name="Sign in with SSO").click()
    if login is not None:
        page.wait_for_url(f"{sso.idp.issuer}/**")
        page.locator("input[name=login]").fill(login)
        page.locator("input[name=password]").fill("any password")
        page.get_by_role("button", name="Sign-in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    return callbacks


def session_of(page: Any) -> dict[str, Any]:
    saved = page.evaluate("() => JSON.parse(sessionStorage.getItem('switchboard.console.session'))")
    assert isinstance(saved, dict)
    return saved


def test_sso_sign_in_creates_the_user_with_the_mapped_role_and_sign_out_ends_it(
    page: Any, sso: SsoSetup
) -> None:
    callbacks = sign_in_with_sso(page, sso, "ada")
    expect(page.get_by_text("Signed in as ada@example.test (Admin)")).to_be_visible()
    expect(page.get_by_role("heading", name="Usage", level=2)).to_be_visible()
    assert "#sso=" not in page.url  # the one-time ticket is out of the address bar and history
    assert len(callbacks) == 1 and "code=" in callbacks[0] and "state=" in callbacks[0]

    saved = session_of(page)
    bearer = {"authorization": f"Bearer {saved['token']}"}
    me = httpx.get(f"{sso.gateway.url}/protected/jwt", headers=bearer, timeout=30).json()
    assert (me["email"], me["role"]) == ("ada@example.test", "Admin")
    assert httpx.get(f"{sso.gateway.url}/v1/models", headers=bearer, timeout=30).status_code == 200
    # The sign-in is in the audit trail like a password sign-in, with the method it used.
    trail = httpx.get(
        f"{sso.gateway.url}/audit", params={"action": "auth.sign_in"}, headers=bearer, timeout=30
    ).json()["data"]
    assert [e["changes"]["method"][1] for e in trail if e["actor"]["user_id"] == me["user_id"]] == ["sso"]

    # The callback replayed, cookie and all (same state, same code): refused, never a second session.
    state = httpx.URL(callbacks[0]).params["state"]
    cookie = {"name": "switchboard_sso_state", "value": state, "domain": "127.0.0.1"}
    page.context.add_cookies([{**cookie, "path": "/auth/sso/callback"}])
    page.goto(callbacks[0])
    expect(page.get_by_role("alert")).to_contain_text("expired or was already used")

    page.goto(f"{sso.gateway.url}/console")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
    refreshed = httpx.post(
        f"{sso.gateway.url}/auth/refresh", json={"refresh_token": saved["refresh_token"]}, timeout=30
    )
    assert refreshed.status_code == 401

    # Signing in again (the provider's own session is still open) is the same user, known by issuer
    # and subject.
    sign_in_with_sso(page, sso, None)
    again = httpx.get(
        f"{sso.gateway.url}/protected/jwt",
        headers={"authorization": f"Bearer {session_of(page)['token']}"},
        timeout=30,
    ).json()
    assert again["user_id"] == me["user_id"]


def test_a_reader_group_signs_in_as_viewer_without_write_controls(page: Any, sso: SsoSetup) -> None:
    sign_in_with_sso(page, sso, "bert")
    expect(page.get_by_text("Signed in as bert@example.test (Viewer)")).to_be_visible()
    page.get_by_role("navigation").get_by_role("link", name="API keys", exact=True).click()
    expect(page.get_by_role("heading", name="API keys", level=2)).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("Create"))).to_have_count(0)


def test_password_accounts_still_sign_in_beside_sso(page: Any, sso: SsoSetup) -> None:
    account = make_account(sso.gateway, "User")
    page.goto(f"{sso.gateway.url}/console")
    expect(page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
    page.get_by_label("Email").fill(account.email)
    page.get_by_label("Password").fill(account.password)
    page.get_by_label("Password").press("Enter")
    expect(page.get_by_text(f"Signed in as {account.email} (User)")).to_be_visible()


@pytest.mark.parametrize(
    ("query", "cookie", "message"),
    [
        ("state=made-up&code=x", "made-up", "expired or was already used"),
        ("state=made-up&code=x", None, "not started in this browser"),
        ("code=x", None, "not started in this browser"),
        ("state=one&code=x", "another", "not started in this browser"),
    ],
)
def test_a_callback_with_an_unknown_or_unbound_state_is_a_401_page(
    sso: SsoSetup, query: str, cookie: str | None, message: str
) -> None:
    cookies = {"switchboard_sso_state": cookie} if cookie else {}
    with httpx.Client(base_url=sso.gateway.url, cookies=cookies, timeout=30) as client:
        response = client.get(f"/auth/sso/callback?{query}")
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/html")
    assert message in response.text


def test_the_providers_refusal_comes_back_as_a_401_page(sso: SsoSetup) -> None:
    with httpx.Client(base_url=sso.gateway.url, timeout=30) as client:
        start = client.get("/auth/sso/login")
        assert start.status_code == 302
        location = httpx.URL(start.headers["location"])
        assert location.params["code_challenge_method"] == "S256"
        assert location.params["nonce"] and location.params["code_challenge"]
        state = location.params["state"]
        refused = client.get(f"/auth/sso/callback?state={state}&error=access_denied")
        assert refused.status_code == 401
        assert "did not sign you in (access_denied)" in refused.text
        # The state was spent by that answer: the same state with a code is refused too.
        client.cookies.set("switchboard_sso_state", state)
        assert client.get(f"/auth/sso/callback?state={state}&code=x").status_code == 401


def test_a_session_ticket_works_once(sso: SsoSetup) -> None:
    response = httpx.post(f"{sso.gateway.url}/auth/sso/session", json={"ticket": "made-up"}, timeout=30)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    bad = httpx.post(f"{sso.gateway.url}/auth/sso/session", json={"ticket": 5}, timeout=30)
    assert bad.status_code == 400
    # Signing out with a token that is not one (or twice) is quietly done, never an error page.
    gone = httpx.post(f"{sso.gateway.url}/auth/logout", json={"refresh_token": "svc_rt_nope"}, timeout=30)
    assert gone.status_code == 204
