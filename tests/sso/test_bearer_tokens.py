"""Tokens of the SSO issuer on the API (SPEC §24): the provider's own tokens call /v1 through the
OpenAI SDK, the role comes from the mapped claim, and every bad token is a 401, never a 500."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from joserfc.jwk import OKPKey, RSAKey

from switchboard.errors import Unauthorized
from switchboard.sso.issuer import Issuer
from switchboard.sso.verify import TokenVerifier
from tests.llm.conftest import provider_base
from tests.sso.conftest import CLIENT_ID, SsoSetup, signing_keys
from tests.support.recorder import RECORDER, tls_context


def claims_of(setup: SsoSetup, token: str) -> httpx.Response:
    return httpx.get(
        f"{setup.gateway.url}/protected/jwt",
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
        verify=tls_context(),
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_provider_issued_access_token_calls_v1_with_the_openai_sdk(
    sso: SsoSetup, fake_provider: Any
) -> None:
    token = RECORDER.remember_secret(sso.idp.client_credentials_token())
    client = openai.OpenAI(base_url=f"{sso.gateway.url}/v1", api_key=token, max_retries=0)
    assert "openai/gpt-4o-mini" not in [model.id for model in client.models.list()]  # no credential yet
    # The token's subject is a user from its first call: it stores a credential and calls a model.
    body = {
        "provider": "openai",
        "secret": RECORDER.remember_secret("sk-sso-" + "k" * 24),
        "base_url": provider_base(fake_provider, "openai"),
        "label": "sso",
    }
    bearer = {"authorization": f"Bearer {token}"}
    created = httpx.post(f"{sso.gateway.url}/llm-credentials", json=body, headers=bearer, timeout=30)
    assert created.status_code == 201, created.text
    assert "openai/gpt-4o-mini" in [model.id for model in client.models.list()]
    answer = client.chat.completions.create(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
    )
    assert answer.choices[0].message.content
    claims = claims_of(sso, token).json()
    assert (claims["auth_method"], claims["role"]) == ("sso", "User")  # no role claim: the default


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA", "Ed25519"])
def test_each_allowed_algorithm_signs_a_token_the_gateway_accepts_with_the_mapped_role(
    sso: SsoSetup, alg: str
) -> None:
    token = sso.idp.sign(sso.idp.claims(email="ada@example.test", groups=["x", "switchboard-admins"]), alg)
    response = claims_of(sso, token)
    assert response.status_code == 200, response.text
    assert (response.json()["role"], response.json()["email"]) == ("Admin", "ada@example.test")


def test_one_subject_is_one_user_and_the_highest_mapped_role_wins(sso: SsoSetup) -> None:
    subject = f"person-{time.time_ns()}"
    ids = set()
    for groups, role in (
        (["switchboard-readers"], "Viewer"),
        (["switchboard-readers", "switchboard-admins"], "Admin"),
        (["someone-else"], "User"),
        ("switchboard-admins", "Admin"),  # a single string, as some issuers send one group
    ):
        response = claims_of(sso, sso.idp.sign(sso.idp.claims(sub=subject, groups=groups)))
        assert response.status_code == 200, response.text
        assert response.json()["role"] == role
        ids.add(response.json()["user_id"])
    assert len(ids) == 1


def _none_token(setup: SsoSetup) -> str:
    header = {"alg": "none", "kid": setup.idp.key("RS256").kid}
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(setup.idp.claims()).encode())}."


def _hs256_with_the_public_key(setup: SsoSetup) -> str:
    """The classic confusion: HMAC keyed with the RSA public key a verifier might treat as a secret."""
    key: RSAKey = setup.idp.key("RS256")
    header = {"alg": "HS256", "kid": key.kid}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(setup.idp.claims()).encode())}"
    for secret in (key.as_pem(private=False), json.dumps(key.as_dict(private=False)).encode()):
        signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{b64(signature)}"
    raise AssertionError


def _without_alg(key: OKPKey) -> OKPKey:
    """The same key pair, free of its `alg`: it signs what its published copy (`alg` EdDSA) may not."""
    return OKPKey.import_key({k: v for k, v in key.as_dict(private=True).items() if k != "alg"})


BAD_TOKENS: dict[str, Callable[[SsoSetup], str]] = {
    "wrong issuer": lambda s: s.idp.sign(s.idp.claims(iss="http://127.0.0.1:1/other")),
    "issuer with a trailing slash": lambda s: s.idp.sign(s.idp.claims(iss=s.idp.issuer + "/")),
    "wrong audience": lambda s: s.idp.sign(s.idp.claims(aud="another-client")),
    "no audience": lambda s: s.idp.sign(s.idp.claims(aud=None)),
    "expired": lambda s: s.idp.sign(s.idp.claims(exp=int(time.time()) - 5)),
    "no exp": lambda s: s.idp.sign(s.idp.claims(exp=None)),
    "nbf in the future": lambda s: s.idp.sign(s.idp.claims(nbf=int(time.time()) + 3600)),
    "no sub": lambda s: s.idp.sign(s.idp.claims(sub=None)),
    "alg none": _none_token,
    "HS256 keyed with the public key": _hs256_with_the_public_key,
    "unknown kid": lambda s: s.idp.sign(s.idp.claims(), key=signing_keys().keys[0]),
    "another key under the provider's kid": lambda s: s.idp.sign(
        s.idp.claims(), "RS256", key=RSAKey.generate_key(2048, parameters={"kid": s.idp.key("RS256").kid})
    ),
    "RS384 (not allowed)": lambda s: s.idp.sign(
        s.idp.claims(), "RS384", key=RSAKey.generate_key(2048, parameters={"kid": s.idp.key("RS256").kid})
    ),
    "RS256 under the EC key's kid": lambda s: s.idp.sign(s.idp.claims(), "RS256", kid=s.idp.key("ES256").kid),
    "Ed25519 with the key published for EdDSA": lambda s: s.idp.sign(
        s.idp.claims(), "Ed25519", key=_without_alg(s.idp.key("EdDSA"))
    ),
    "garbage": lambda s: "eyJhbGciOiJSUzI1NiJ9.not-base64!.x",
}


@pytest.mark.parametrize("name", list(BAD_TOKENS))
def test_a_bad_token_is_a_401_on_v1_and_elsewhere(sso: SsoSetup, name: str) -> None:
    token = BAD_TOKENS[name](sso)
    client = openai.OpenAI(base_url=f"{sso.gateway.url}/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    response = claims_of(sso, token)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] == "UNAUTHORIZED"


def test_an_id_token_with_another_nonce_is_refused(sso: SsoSetup) -> None:
    token = sso.idp.sign(sso.idp.claims(nonce="the-nonce-of-another-sign-in"))

    async def verify(nonce: str) -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            return await TokenVerifier(Issuer(sso.idp.issuer, client), CLIENT_ID).claims(token, nonce=nonce)

    import asyncio

    assert asyncio.run(verify("the-nonce-of-another-sign-in"))["sub"] == "ada"
    with pytest.raises(Unauthorized):
        asyncio.run(verify("the-nonce-this-sign-in-sent"))
