"""SWITCHBOARD_OIDC_* settings: a deployment with a broken SSO configuration does not start."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.settings import SettingsError
from tests.support.gateway import Gateway, build_settings

ISSUER = {"SWITCHBOARD_OIDC_ISSUER": "https://login.example.com/", "SWITCHBOARD_OIDC_CLIENT_ID": "sb"}


def settings(tmp_path: Path, **env: str) -> object:
    config = tmp_path / "switchboard.yaml"
    config.write_text("{}", encoding="utf-8")
    return build_settings(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/db.sqlite", config, env)


def test_without_an_issuer_sso_is_off(tmp_path: Path) -> None:
    assert settings(tmp_path).oidc is None  # type: ignore[attr-defined]


def test_the_role_comes_from_the_mapped_claim_nested_or_not(tmp_path: Path) -> None:
    oidc = settings(
        tmp_path,
        **ISSUER,
        SWITCHBOARD_OIDC_ROLE_CLAIM="realm_access.roles",
        SWITCHBOARD_OIDC_ROLE_MAP='{"ops": "Operator", "boss": "SuperAdmin"}',
    ).oidc  # type: ignore[attr-defined]
    assert oidc.issuer == "https://login.example.com/"  # kept as given: `iss` is compared exactly
    assert oidc.role_of({"realm_access": {"roles": ["ops", "boss"]}}) == "SuperAdmin"
    assert oidc.role_of({"realm_access": {"roles": ["ops"]}}) == "Operator"
    assert oidc.role_of({"realm_access": "ops"}) == "User"
    assert oidc.role_of({}) == "User"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SWITCHBOARD_OIDC_ISSUER": "https://login.example.com"}, "CLIENT_ID"),
        ({"SWITCHBOARD_OIDC_ISSUER": "login.example.com", "SWITCHBOARD_OIDC_CLIENT_ID": "sb"}, "ISSUER"),
        ({**ISSUER, "SWITCHBOARD_OIDC_ROLE_MAP": "admins=Admin"}, "JSON object"),
        ({**ISSUER, "SWITCHBOARD_OIDC_ROLE_MAP": '["Admin"]'}, "JSON object"),
        ({**ISSUER, "SWITCHBOARD_OIDC_ROLE_MAP": '{"admins": "Root"}'}, "not one of"),
        ({**ISSUER, "SWITCHBOARD_OIDC_SCOPES": "email profile"}, "openid"),
    ],
)
def test_a_broken_sso_setting_stops_the_start(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings(tmp_path, **env)


def test_a_gateway_without_an_issuer_offers_no_sso(gateway: Gateway) -> None:
    client = gateway.client()
    assert client.get("/auth/sso").json() == {"enabled": False, "sign_in_url": None}
    assert client.get("/auth/sso/login").status_code == 404
    assert client.post("/auth/sso/session", json={"ticket": "x"}).status_code == 404
