"""`GET /protected/jwt` shows the caller's claims; the auth routes are documented under one tag."""

from __future__ import annotations

import uuid

from tests.support.gateway import Gateway

AUTH_ROUTES = {
    ("post", "/auth/login"),
    ("post", "/auth/refresh"),
    ("post", "/auth/api-key"),
    ("post", "/auth/api-key/generate"),
    ("get", "/auth/api-keys"),
    ("post", "/auth/api-keys/{key_id}/revoke"),
    ("get", "/protected/jwt"),
    ("post", "/auth/delegation/jwt"),
    ("get", "/auth/delegation/tokens"),
    ("delete", "/auth/delegation/tokens/{token_id}"),
    ("get", "/auth/delegation-tokens"),
    ("delete", "/auth/delegation-tokens/{token_id}"),
    ("post", "/auth/logout"),
    ("get", "/auth/sso"),
    ("post", "/auth/sso/session"),
}


def test_claims_of_a_jwt_caller(gateway: Gateway) -> None:
    user = gateway.user("Operator", email="op@example.test")
    response = user.client.get("/protected/jwt")
    assert response.status_code == 200
    claims = response.json()
    assert claims["user_id"] == str(user.id) and claims["role"] == "Operator"
    assert claims["email"] == "op@example.test" and claims["auth_method"] == "jwt"
    assert claims["permissions"] == ["CreateGroup", "CryptoOperations"]
    assert claims["acting_as"] is None and claims["delegation_scope"] is None
    assert claims["exp"] - claims["iat"] == 900


def test_claims_of_a_delegated_caller(gateway: Gateway) -> None:
    sub, room = uuid.uuid4(), uuid.uuid4()
    token = gateway.tokens.delegation(sub=sub, room_id=room, scope=["read", "write"])
    claims = gateway.client(token).get("/protected/jwt").json()
    assert claims["auth_method"] == "delegation" and claims["acting_as"] == str(room)
    assert claims["delegation_scope"] == ["read", "write"] and claims["delegation_token_id"]


def test_claims_need_a_valid_bearer(gateway: Gateway) -> None:
    expired = gateway.tokens.mint(ttl_seconds=-300)
    cases = {None: "missing bearer token", "garbage": "invalid token", expired: "token expired"}
    for token, message in cases.items():
        response = gateway.client(token).get("/protected/jwt")
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
        assert response.json() == {"error": message, "code": "UNAUTHORIZED"}
    wrong_audience = gateway.tokens.mint(audience="someone-else")
    assert gateway.client(wrong_audience).get("/protected/jwt").status_code == 401


def test_every_auth_route_is_tagged_auth(gateway: Gateway) -> None:
    paths = gateway.client().get("/openapi.json").json()["paths"]
    found = {
        (method, path)
        for path, item in paths.items()
        for method in item
        if path.startswith(("/auth", "/protected"))
    }
    assert found == AUTH_ROUTES
    assert all(paths[path][method]["tags"] == ["Auth"] for method, path in AUTH_ROUTES)
