"""Remembering verified tokens never extends their life or skips a revocation check."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from switchboard.auth.authenticator import Authenticator
from switchboard.auth.principal import Principal
from switchboard.auth.tokens import TokenCodec
from switchboard.errors import Unauthorized
from tests.support.gateway import Gateway

SECRET = "s" * 48


def test_a_cached_token_stops_working_when_it_expires() -> None:
    authenticator = Authenticator(TokenCodec(SECRET, "svc-agents", leeway_seconds=0))
    # `exp` is the minting second plus the ttl: 3 s leaves at least 2 s of validity for the two
    # calls below on a busy machine (1 s left as little as a few ms when minted late in a second).
    token = authenticator.codec.mint(sub=uuid.uuid4(), ttl_seconds=3)
    expires_at_latest = int(time.time()) + 3
    header = f"Bearer {token}"
    assert asyncio.run(authenticator.authenticate(header)).role == "User"
    assert asyncio.run(authenticator.authenticate(header)).role == "User"  # served from the cache
    time.sleep(max(0.0, expires_at_latest + 0.05 - time.time()))
    with pytest.raises(Unauthorized):
        asyncio.run(authenticator.authenticate(header))


def test_the_gateway_refuses_a_cached_token_once_its_exp_passes_despite_the_clock_leeway(
    gateway: Gateway,
) -> None:
    assert gateway.settings.jwt_leeway_seconds > 0  # the leeway covers `iat` skew, never expiry
    token = gateway.tokens.mint(ttl_seconds=3)
    expires_at_latest = int(time.time()) + 3  # `exp` is the minting second plus the ttl
    client = gateway.client(token)
    assert client.get("/protected/jwt").status_code == 200  # verified, and now cached
    time.sleep(max(0.0, expires_at_latest + 0.05 - time.time()))
    response = client.get("/protected/jwt")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_cached_delegation_token_is_still_checked_for_revocation_each_time() -> None:
    authenticator = Authenticator(TokenCodec(SECRET, "svc-agents"))
    checks: list[Principal] = []
    revoked = False

    async def check(principal: Principal) -> None:
        checks.append(principal)
        if revoked:
            raise Unauthorized("token revoked")

    authenticator.revocation_check = check
    token = authenticator.codec.mint(
        sub=uuid.uuid4(),
        extra={
            "auth_method": "delegation",
            "acting_as": str(uuid.uuid4()),
            "delegation_scope": ["read"],
            "delegation_token_id": str(uuid.uuid4()),
        },
    )
    asyncio.run(authenticator.authenticate(f"Bearer {token}"))
    revoked = True
    with pytest.raises(Unauthorized):
        asyncio.run(authenticator.authenticate(f"Bearer {token}"))
    assert len(checks) == 2


def test_a_tampered_copy_of_a_cached_token_is_refused() -> None:
    authenticator = Authenticator(TokenCodec(SECRET, "svc-agents"))
    token = authenticator.codec.mint(sub=uuid.uuid4())
    asyncio.run(authenticator.authenticate(f"Bearer {token}"))
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    with pytest.raises(Unauthorized):
        asyncio.run(authenticator.authenticate(f"Bearer {tampered}"))
