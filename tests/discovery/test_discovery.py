"""SPEC §11: the four well-known documents field-exact, the /mcp challenge, /version, /health, /ready."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import httpx
import pytest

from switchboard.db.engine import make_engine
from tests.support.gateway import Gateway

PUBLIC = "https://gateway.example.test"
AUTH = "https://auth.example.test"

PROTECTED_RESOURCE = {
    "resource": f"{PUBLIC}/mcp",
    "authorization_servers": [AUTH],
    "bearer_methods_supported": ["header"],
}
AUTHORIZATION_SERVER = {
    "issuer": AUTH,
    "authorization_endpoint": f"{AUTH}/authorize",
    "token_endpoint": f"{AUTH}/token",
    "registration_endpoint": f"{AUTH}/register",
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token"],
    "code_challenge_methods_supported": ["S256"],
    "token_endpoint_auth_methods_supported": ["none"],
    "scopes_supported": ["mcp"],
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/.well-known/oauth-protected-resource", PROTECTED_RESOURCE),
        ("/.well-known/oauth-protected-resource/mcp", PROTECTED_RESOURCE),
        ("/.well-known/oauth-authorization-server", AUTHORIZATION_SERVER),
        ("/.well-known/oauth-authorization-server/mcp", AUTHORIZATION_SERVER),
    ],
)
def test_well_known_documents_are_anonymous_and_field_exact(
    gateway: Gateway, path: str, expected: object
) -> None:
    response = httpx.get(gateway.url + path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == expected


def test_the_mcp_suffix_authorization_server_document_has_exactly_the_nine_fields(gateway: Gateway) -> None:
    document = httpx.get(gateway.url + "/.well-known/oauth-authorization-server/mcp").json()
    assert sorted(document) == sorted(
        [
            "issuer",
            "authorization_endpoint",
            "token_endpoint",
            "registration_endpoint",
            "response_types_supported",
            "grant_types_supported",
            "code_challenge_methods_supported",
            "token_endpoint_auth_methods_supported",
            "scopes_supported",
        ]
    )


def test_documents_follow_the_configured_urls(make_gateway: Callable[..., Gateway]) -> None:
    other = make_gateway(
        env={
            "SWITCHBOARD_PUBLIC_URL": "https://llm.corp.test/",
            "SWITCHBOARD_AUTH_URL": "https://id.corp.test",
        }
    )
    resource = httpx.get(other.url + "/.well-known/oauth-protected-resource").json()
    assert resource["resource"] == "https://llm.corp.test/mcp"
    assert resource["authorization_servers"] == ["https://id.corp.test"]
    assert (
        httpx.get(other.url + "/.well-known/oauth-authorization-server").json()["issuer"]
        == "https://id.corp.test"
    )
    challenge = httpx.post(other.url + "/mcp").headers["www-authenticate"]
    assert (
        challenge
        == 'Bearer resource_metadata="https://llm.corp.test/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token"])
def test_an_anonymous_post_to_mcp_is_challenged_towards_the_resource_metadata(
    gateway: Gateway, authorization: str | None
) -> None:
    headers = {"authorization": authorization} if authorization else {}
    response = httpx.post(
        gateway.url + "/mcp", json={"jsonrpc": "2.0", "method": "initialize", "id": 1}, headers=headers
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{PUBLIC}/.well-known/oauth-protected-resource/mcp"'
    )
    assert response.json()["code"] == "UNAUTHORIZED"


def test_an_authenticated_post_to_mcp_says_the_transport_is_not_served(gateway: Gateway) -> None:
    response = gateway.user().client.post("/mcp", json={"jsonrpc": "2.0", "method": "initialize", "id": 1})
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"
    assert "MCP transport" in response.json()["error"]


def test_version_reports_service_api_version_sha_and_build_time(gateway: Gateway) -> None:
    response = httpx.get(gateway.url + "/version")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"service", "api_version", "git_sha", "built_at"}
    assert body["service"] == "svc-agents"
    assert body["api_version"] == "0.14.0"
    assert body["git_sha"] == "testsha"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", body["built_at"])
    assert datetime.fromisoformat(body["built_at"].replace("Z", "+00:00")).tzinfo is not None


def test_health_is_anonymous_and_ok(gateway: Gateway) -> None:
    response = httpx.get(gateway.url + "/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_ready_is_200_when_the_database_answers(gateway: Gateway) -> None:
    response = httpx.get(gateway.url + "/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "database": "ok"}


def test_ready_is_a_flat_503_when_the_database_does_not_answer(make_gateway: Callable[..., Gateway]) -> None:
    instance = make_gateway()
    app = instance.app
    healthy = app.state.engine
    # A real engine aimed at a port nothing listens on: the database is "down" for this replica.
    app.state.engine = make_engine("postgresql+asyncpg://nobody@127.0.0.1:9/none")
    try:
        response = httpx.get(instance.url + "/ready")
        assert response.status_code == 503
        assert response.json() == {"error": "database unavailable", "code": "INTERNAL_ERROR"}
        assert httpx.get(instance.url + "/health").status_code == 200
    finally:
        down, app.state.engine = app.state.engine, healthy
        instance.server.call_soon(down.dispose())
    assert httpx.get(instance.url + "/ready").status_code == 200
