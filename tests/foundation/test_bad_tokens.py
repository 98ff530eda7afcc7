"""Every kind of bad bearer token is a 401 with WWW-Authenticate, in the shape of its surface, never a 500."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.gateway import TEST_AUDIENCE, TEST_JWT_SECRET, Gateway


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "sub": str(uuid.uuid4()),
        "aud": [TEST_AUDIENCE],
        "iat": now,
        "exp": now + 600,
        "role": "User",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def hs256(payload: dict[str, Any], secret: str = TEST_JWT_SECRET) -> str:
    return jwt.encode(payload, secret, algorithm="HS256")


def handmade(header: dict[str, Any], payload: dict[str, Any], signature: bytes) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}.{_b64(signature)}"


def rs256_token() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(claims(), key, algorithm="RS256")


def confused_rs256_token() -> str:
    """Header says RS256, signature is HMAC with the shared secret (the classic key-confusion attack)."""
    header = {"alg": "RS256", "typ": "JWT"}
    body = claims()
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
    signature = hmac.new(TEST_JWT_SECRET.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


BAD_TOKENS = {
    "malformed-garbage": lambda: "not-a-token",
    "malformed-three-dots": lambda: "a.b.c",
    "malformed-bad-base64": lambda: "eyJ!!!.eyJ###.sig",
    "expired": lambda: hs256(claims(iat=int(time.time()) - 7200, exp=int(time.time()) - 3600)),
    "wrongly-signed": lambda: hs256(claims(), "another-secret-" + "y" * 40),
    "alg-none": lambda: handmade({"alg": "none", "typ": "JWT"}, claims(), b""),
    "alg-HS512": lambda: jwt.encode(claims(), TEST_JWT_SECRET, algorithm="HS512"),
    "alg-RS256": rs256_token,
    "alg-RS256-signed-with-secret": confused_rs256_token,
    "wrong-audience-list": lambda: hs256(claims(aud=["svc-payments"])),
    "wrong-audience-string": lambda: hs256(claims(aud="svc-payments")),
    "missing-exp": lambda: hs256(claims(exp=None)),
    "missing-iat": lambda: hs256(claims(iat=None)),
    "missing-sub": lambda: hs256(claims(sub=None)),
    "missing-aud": lambda: hs256(claims(aud=None)),
    "non-uuid-sub": lambda: hs256(claims(sub="alice")),
    "absurd-exp": lambda: hs256(claims(exp=10**30)),
    "string-exp": lambda: hs256(claims(exp="99999999999")),
    "iat-in-the-future": lambda: hs256(claims(iat=int(time.time()) + 3600, exp=int(time.time()) + 7200)),
    # Signed by the right secret, yet claims no issuer of ours would write.
    "unknown-role": lambda: hs256(claims(role="Wizard")),
    "role-in-lower-case": lambda: hs256(claims(role="admin")),
    "role-as-a-list": lambda: hs256(claims(role=["Admin"])),
    "null-role": lambda: hs256({**claims(), "role": None}),
    "permissions-as-a-string": lambda: hs256(claims(permissions="ReadUsage CreateGroup")),
    "permissions-with-a-number": lambda: hs256(claims(permissions=["ReadUsage", 7])),
    "acting-as-without-delegation-id": lambda: hs256(
        claims(auth_method="delegation", acting_as=str(uuid.uuid4()), delegation_scope=["read"])
    ),
    "payload-not-an-object": lambda: handmade({"alg": "HS256", "typ": "JWT"}, [1, 2], b"x"),  # type: ignore[arg-type]
    "unknown-api-key": lambda: "svc_api_" + "z" * 40,
}


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
def test_a_bad_token_is_a_401_with_a_challenge(probe_gateway: Gateway, kind: str) -> None:
    response = probe_gateway.client().get(
        "/probe/me", headers={"authorization": f"Bearer {BAD_TOKENS[kind]()}"}
    )
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] == "UNAUTHORIZED"
    assert isinstance(response.json()["error"], str)


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic dXNlcjpwYXNz", "token abc"])
def test_a_missing_or_non_bearer_authorization_is_a_401(probe_gateway: Gateway, header: str | None) -> None:
    headers = {} if header is None else {"authorization": header}
    response = httpx.get(probe_gateway.url + "/probe/me", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json() == {"error": "missing bearer token", "code": "UNAUTHORIZED"}


@pytest.mark.parametrize("audience", [TEST_AUDIENCE, [TEST_AUDIENCE], ["svc-payments", TEST_AUDIENCE]])
def test_aud_may_be_a_string_or_a_list_containing_the_audience(probe_gateway: Gateway, audience: Any) -> None:
    sub = str(uuid.uuid4())
    token = hs256(claims(sub=sub, aud=audience))
    response = probe_gateway.client(token).get("/probe/me")
    assert response.status_code == 200, response.text
    assert response.json() == {"sub": sub}


def test_a_token_just_inside_the_maximum_lifetime_is_accepted(probe_gateway: Gateway) -> None:
    token = hs256(claims(exp=int(time.time()) + 365 * 24 * 3600))
    assert probe_gateway.client(token).get("/probe/me").status_code == 200


def test_a_401_on_v1_has_openai_shape(probe_gateway: Gateway) -> None:
    response = probe_gateway.client(hs256(claims(aud=["nope"]))).post("/v1/probe", json={"name": "x"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json() == {
        "error": {
            "message": "invalid token",
            "type": "authentication_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


def test_a_401_on_the_agents_registry_has_nested_shape(probe_gateway: Gateway) -> None:
    response = probe_gateway.client().post("/agents/probe", json={"name": "x"})
    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "UNAUTHORIZED", "message": "missing bearer token", "details": None}
    }
