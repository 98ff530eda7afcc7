"""The provider rotates its keys mid-test (SPEC §24): a token under a new `kid` is accepted after one
refetch of the key set, and refetches for unknown kids happen at most once a minute.

A gateway and provider of this module's own: the counts below start from a gateway that has
fetched nothing.
"""

from __future__ import annotations

import httpx

from tests.sso.conftest import SsoSetup, signing_keys
from tests.support.recorder import RECORDER


def status(setup: SsoSetup, token: str) -> int:
    bearer = {"authorization": f"Bearer {RECORDER.remember_secret(token)}"}
    return httpx.get(f"{setup.gateway.url}/v1/models", headers=bearer, timeout=30).status_code


def test_a_rotated_key_is_fetched_once_and_unknown_kids_wait_for_the_minute(sso: SsoSetup) -> None:
    idp = sso.idp
    assert idp.jwks_fetches() == 0  # nothing is fetched before a token needs it
    first = idp.client_credentials_token()
    assert status(sso, first) == 200
    assert status(sso, idp.client_credentials_token()) == 200
    assert idp.jwks_fetches() == 1  # the key set is kept, never fetched per call

    idp.rotate()
    rotated = idp.client_credentials_token()  # signed by the provider with its new key
    assert status(sso, rotated) == 200
    assert idp.jwks_fetches() == 2  # one refetch for the unknown kid
    assert status(sso, idp.sign(idp.claims(), "EdDSA")) == 200  # the new set's other keys too
    assert idp.jwks_fetches() == 2

    # Within the minute, neither another rotation nor made-up kids make the gateway ask again.
    idp.rotate()
    assert status(sso, idp.client_credentials_token()) == 401
    for _ in range(5):
        assert status(sso, idp.sign(idp.claims(), key=signing_keys().keys[0])) == 401
    assert idp.jwks_fetches() == 2
