"""Refresh tokens: single use, rotated in families, a reuse ends the family, never an access token."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
from sqlalchemy import update

from switchboard.auth.models import RefreshToken
from switchboard.auth.token_format import REFRESH_PREFIX, checksum
from switchboard.kit.clock import utcnow
from tests.auth.conftest import Account, login, sign_in
from tests.support.gateway import Gateway


def refresh(gateway: Gateway, token: str) -> httpx.Response:
    return gateway.client().post("/auth/refresh", json={"refresh_token": token})


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.json() == {"error": "invalid refresh token", "code": "UNAUTHORIZED"}


def test_refresh_returns_a_new_pair_for_the_same_user_and_session(gateway: Gateway, account: Account) -> None:
    first = login(gateway, account)
    second = sign_in(gateway, "/auth/refresh", {"refresh_token": first["refresh_token"]})
    assert second["refresh_token"] != first["refresh_token"] and second["token"] != first["token"]
    assert second["user"] == first["user"] and second["expires_in"] == 900
    before = gateway.client(first["token"]).get("/protected/jwt").json()
    after = gateway.client(second["token"]).get("/protected/jwt").json()
    assert after["user_id"] == str(account.id) and after["session_id"] == before["session_id"]
    third = sign_in(gateway, "/auth/refresh", {"refresh_token": second["refresh_token"]})
    assert third["user"]["id"] == str(account.id)


def test_a_reused_refresh_token_is_refused_and_ends_its_family(gateway: Gateway, account: Account) -> None:
    first = login(gateway, account)
    rotated = sign_in(gateway, "/auth/refresh", {"refresh_token": first["refresh_token"]})
    assert_refused(refresh(gateway, first["refresh_token"]))
    # The thief or the owner, whoever holds the newer token, has lost it too.
    assert_refused(refresh(gateway, rotated["refresh_token"]))
    # Another sign-in of the same user is a different family and carries on.
    other = login(gateway, account)
    assert sign_in(gateway, "/auth/refresh", {"refresh_token": other["refresh_token"]})


def test_a_refresh_token_is_never_an_access_token_nor_the_reverse(gateway: Gateway, account: Account) -> None:
    result = login(gateway, account)
    as_bearer = gateway.client(result["refresh_token"]).get("/protected/jwt")
    assert as_bearer.status_code == 401
    assert_refused(refresh(gateway, result["token"]))
    # A JWT signed with our secret but typed `refresh` is refused as a bearer as well.
    typed = gateway.tokens.mint(sub=account.id, typ="refresh")
    assert gateway.client(typed).get("/protected/jwt").status_code == 401
    # The refresh token was not consumed by any of this.
    assert sign_in(gateway, "/auth/refresh", {"refresh_token": result["refresh_token"]})


def test_forged_and_malformed_refresh_tokens_get_the_same_401(gateway: Gateway) -> None:
    head = REFRESH_PREFIX + "a" * 43
    for forged in (head + checksum(head), head + "000000", "svc_rt_", "x" * 300):
        assert_refused(refresh(gateway, forged))
    for body in ({}, {"refresh_token": ""}, {"refresh_token": 12}):
        response = gateway.client().post("/auth/refresh", json=body)
        assert response.status_code == 400 and response.json()["code"] == "VALIDATION_FAILED"


def test_an_expired_refresh_token_is_refused_without_ending_the_family(
    gateway: Gateway, account: Account
) -> None:
    first = login(gateway, account)
    rotated = sign_in(gateway, "/auth/refresh", {"refresh_token": first["refresh_token"]})
    app = gateway.app
    token_hash = app.state.auth.refresh_hash(rotated["refresh_token"])

    async def age() -> None:
        async with app.state.sessionmaker() as session, session.begin():
            await session.execute(
                update(RefreshToken)
                .where(RefreshToken.token_hash == token_hash)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

    gateway.server.call_soon(age())
    assert_refused(refresh(gateway, rotated["refresh_token"]))


def test_concurrent_refreshes_of_one_token_let_one_through(gateway: Gateway, account: Account) -> None:
    token = login(gateway, account)["refresh_token"]
    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(lambda _: refresh_unrecorded(gateway.url, token), range(8)))
    assert statuses == [200] + [401] * 7


def refresh_unrecorded(base_url: str, token: str) -> int:
    # The winner's answer holds a fresh refresh token, so these calls stay out of the leak recorder.
    with httpx.Client(base_url=base_url, timeout=30.0) as client:
        return client.post("/auth/refresh", json={"refresh_token": token}).status_code
