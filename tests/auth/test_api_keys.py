"""API keys: issued once in a checkable format, listed as metadata, usable as a bearer, revocable."""

from __future__ import annotations

import re
import zlib

import pytest

from tests.auth.conftest import Account, issue_key, login, sign_in
from tests.support.gateway import Gateway

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
KEY_SHAPE = re.compile(r"^svc_api_[0-9A-Za-z]{49}$")


def documented_checksum(head: str) -> str:
    """The README's definition, written independently of the implementation."""
    value, digits = zlib.crc32(head.encode()), ""
    for _ in range(6):
        value, rest = divmod(value, 62)
        digits = BASE62[rest] + digits
    return digits


def flat_401(response: object) -> dict[str, str]:
    assert response.status_code == 401  # type: ignore[attr-defined]
    assert response.headers["www-authenticate"].startswith("Bearer")  # type: ignore[attr-defined]
    body: dict[str, str] = response.json()  # type: ignore[attr-defined]
    assert body["code"] == "UNAUTHORIZED" and set(body) == {"error", "code"}
    return body


def test_issued_key_has_the_documented_format_and_checksum(gateway: Gateway) -> None:
    owner = gateway.user("Operator")
    issued = issue_key(gateway, owner.token)
    key = issued["api_key"]
    assert KEY_SHAPE.match(key)
    assert key[-6:] == documented_checksum(key[:-6])
    assert issued["key_prefix"] == key[:12]
    assert issued["service_name"] == "billing-sync" and issued["revoked_at"] is None


def test_listing_shows_metadata_and_never_the_key(gateway: Gateway) -> None:
    owner = gateway.user()
    issued = issue_key(gateway, owner.token, "reports")
    listed = owner.client.get("/auth/api-keys")
    assert listed.status_code == 200
    (entry,) = listed.json()["data"]
    assert entry == {k: v for k, v in issued.items() if k != "api_key"}
    assert issued["api_key"] not in listed.text


def test_key_is_a_bearer_carrying_the_owners_identity(gateway: Gateway) -> None:
    owner = gateway.user("Manager", email="manager@example.test")
    key = issue_key(gateway, owner.token)["api_key"]
    claims = gateway.client(key).get("/protected/jwt")
    assert claims.status_code == 200
    body = claims.json()
    assert body["user_id"] == str(owner.id) and body["role"] == "Manager"
    assert body["auth_method"] == "api_key" and body["email"] == "manager@example.test"
    assert set(body["permissions"]) == {"CryptoOperations", "CreateGroup", "CreateDelegationToken"}


def test_an_issuer_email_too_long_to_store_is_left_out_not_a_500(gateway: Gateway) -> None:
    issuer = gateway.user(email="x" * 400 + "@example.test")
    key = issue_key(gateway, issuer.token)["api_key"]
    claims = gateway.client(key).get("/protected/jwt").json()
    assert claims["user_id"] == str(issuer.id) and claims["email"] is None


def test_revoked_key_is_refused_on_the_next_request(gateway: Gateway) -> None:
    owner = gateway.user()
    issued = issue_key(gateway, owner.token)
    as_key = gateway.client(issued["api_key"])
    assert as_key.get("/protected/jwt").status_code == 200
    revoked = owner.client.post(f"/auth/api-keys/{issued['id']}/revoke")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    flat_401(as_key.get("/protected/jwt"))
    assert owner.client.get("/auth/api-keys").json()["data"] == []
    # Revoking again is harmless.
    assert owner.client.post(f"/auth/api-keys/{issued['id']}/revoke").status_code == 200


def test_unknown_mistyped_and_revoked_keys_get_one_indistinct_401(gateway: Gateway) -> None:
    owner = gateway.user()
    issued = issue_key(gateway, owner.token)
    owner.client.post(f"/auth/api-keys/{issued['id']}/revoke")
    key = issued["api_key"]
    body = key[8:-6]
    never_issued_body = body[::-1]
    never_issued = f"svc_api_{never_issued_body}" + documented_checksum(f"svc_api_{never_issued_body}")
    mistyped = key[:-1] + ("A" if key[-1] != "A" else "B")
    answers = [flat_401(gateway.client(k).get("/protected/jwt")) for k in (key, never_issued, mistyped)]
    assert answers[0] == answers[1] == answers[2]
    anonymous = gateway.client()
    exchanged = [flat_401(anonymous.post("/auth/api-key", json={"api_key": k})) for k in (key, mistyped)]
    assert exchanged[0] == exchanged[1]


def test_exchange_gives_a_login_result_whose_tokens_die_with_the_key(gateway: Gateway) -> None:
    owner = gateway.user("Operator", email="svc@example.test")
    issued = issue_key(gateway, owner.token)
    result = sign_in(gateway, "/auth/api-key", {"api_key": issued["api_key"]})
    assert result["token_type"] == "Bearer" and result["expires_in"] == 900
    assert result["user"] == {"id": str(owner.id), "email": "svc@example.test", "role": "Operator"}
    claims = gateway.client(result["token"]).get("/protected/jwt").json()
    assert claims["auth_method"] == "api_key" and claims["api_key_id"] == issued["id"]
    refreshed = sign_in(gateway, "/auth/refresh", {"refresh_token": result["refresh_token"]})

    owner.client.post(f"/auth/api-keys/{issued['id']}/revoke")
    flat_401(gateway.client(refreshed["token"]).get("/protected/jwt"))
    flat_401(gateway.client().post("/auth/refresh", json={"refresh_token": refreshed["refresh_token"]}))


def test_someone_elses_key_is_not_found(gateway: Gateway) -> None:
    owner, other = gateway.user(), gateway.user()
    issued = issue_key(gateway, owner.token)
    for path in (f"/auth/api-keys/{issued['id']}/revoke", "/auth/api-keys/not-a-uuid/revoke"):
        response = other.client.post(path)
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    assert gateway.client(issued["api_key"]).get("/protected/jwt").status_code == 200


def test_a_key_cannot_issue_keys_nor_a_delegation_token_manage_them(
    gateway: Gateway, account: Account
) -> None:
    owner = gateway.user()
    key = issue_key(gateway, owner.token)["api_key"]
    via_key = gateway.client(key).post("/auth/api-key/generate", json={"service_name": "x"})
    assert via_key.status_code == 403 and via_key.json()["code"] == "FORBIDDEN"
    exchanged = sign_in(gateway, "/auth/api-key", {"api_key": key})
    assert (
        gateway.client(exchanged["token"])
        .post("/auth/api-key/generate", json={"service_name": "x"})
        .status_code
        == 403
    )
    delegated = gateway.tokens.delegation(sub=owner.id, room_id=owner.id, scope=["manage"])
    for response in (
        gateway.client(delegated).post("/auth/api-key/generate", json={"service_name": "x"}),
        gateway.client(delegated).get("/auth/api-keys"),
    ):
        assert response.status_code == 403
    odd_role = gateway.client(gateway.tokens.mint(role="Wizard"))  # not a role: not a token
    assert odd_role.post("/auth/api-key/generate", json={"service_name": "x"}).status_code == 401
    # A password account issues keys too, with its own role.
    session = login(gateway, account)
    assert issue_key(gateway, session["token"])["api_key"].startswith("svc_api_")


def test_issuing_needs_a_valid_bearer_and_a_service_name(gateway: Gateway) -> None:
    flat_401(gateway.client().post("/auth/api-key/generate", json={"service_name": "x"}))
    flat_401(gateway.client("svc_api_short").post("/auth/api-key/generate", json={"service_name": "x"}))
    owner = gateway.user()
    for body in ({}, {"service_name": ""}, {"service_name": "x" * 101}, {"service_name": 5}):
        response = owner.client.post("/auth/api-key/generate", json=body)
        assert response.status_code == 400 and response.json()["code"] == "VALIDATION_FAILED"
    assert owner.client.get("/auth/api-keys").json()["data"] == []


def test_listing_pages_newest_first_with_a_cursor(gateway: Gateway) -> None:
    owner = gateway.user()
    ids = [issue_key(gateway, owner.token, f"svc-{n}")["id"] for n in range(3)]
    first = owner.client.get("/auth/api-keys", params={"limit": 2}).json()
    second = owner.client.get("/auth/api-keys", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [k["id"] for k in first["data"] + second["data"]] == ids[::-1]
    assert second["next_cursor"] is None


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 501}, {"cursor": "garbage"}, {"cursor": "WzFd"}])
def test_listing_refuses_bad_paging(gateway: Gateway, params: dict[str, object]) -> None:
    response = gateway.user().client.get("/auth/api-keys", params=params)
    assert response.status_code == 400 and response.json()["code"] == "VALIDATION_FAILED"


def test_exchange_refuses_malformed_bodies(gateway: Gateway) -> None:
    client = gateway.client()
    assert client.post("/auth/api-key", json={}).status_code == 400
    assert (
        client.post(
            "/auth/api-key", content=b"{not json", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    assert client.post("/auth/api-key", json={"api_key": 5}).status_code == 400
    flat_401(client.post("/auth/api-key", json={"api_key": "sk-not-ours"}))
