"""Every mutating route of the OpenAPI document writes an audit event: a new route without one fails here.

Each route has a recipe that makes one real change through it with its own `x-request-id`; the test
then finds that request's event, with the action it should carry. Routes that change nothing anyone
audits are listed apart, each with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.auth.conftest import issue_key, login, make_account
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER

# (method, path) → why it writes no event.
NOT_CHANGES = {
    ("POST", "/v1/chat/completions"): "a model call: metered (usage records), not a change",
    ("POST", "/v1/completions"): "a model call",
    ("POST", "/v1/responses"): "a model call",
    ("POST", "/v1/messages"): "a model call",
    ("POST", "/v1/messages/count_tokens"): "counts tokens, stores nothing",
    ("POST", "/v1/embeddings"): "a model call",
    ("POST", "/agents/validate"): "validates a spec without storing it",
    ("POST", "/agents/discover"): "a search",
    ("POST", "/mcp"): "the MCP endpoint's anonymous challenge",
    ("POST", "/webhooks/{webhook_id}/test"): "queues a test delivery (its delivery log shows it)",
    ("POST", "/auth/logout"): "a sign-out revokes the session's refresh tokens; SPEC §22 audits sign-ins",
    (
        "POST",
        "/auth/sso/session",
    ): "an SSO sign-in: auth.sign_in, tested in tests/sso (needs an OpenID provider)",
}


@dataclass
class Ctx:
    gateway: Gateway
    admin: User
    user: User


def ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, response.text
    return response.json() if response.content else None


def send(client: httpx.Client, method: str, path: str, rid: str, body: Any = None) -> Any:
    return ok(client.request(method, path, json=body, headers={"x-request-id": rid}))


def _credential(ctx: Ctx) -> str:
    secret = RECORDER.remember_secret("sk-" + uuid.uuid4().hex)
    body = {"provider": "openai", "secret": secret, "scope": "user"}
    return str(ok(ctx.user.client.post("/llm-credentials", json=body))["id"])


def _economy(ctx: Ctx) -> str:
    body = {"slug": f"e-{uuid.uuid4().hex[:8]}", "name": "Audited"}
    return str(ok(ctx.admin.client.post("/economies", json=body))["id"])


def _limit(ctx: Ctx) -> str:
    body = {"subject_type": "user", "subject_id": str(ctx.user.id), "metric": "requests", "window": "day"}
    return str(ok(ctx.admin.client.post("/limits", json={**body, "amount": "100"}))["id"])


def _room(ctx: Ctx) -> str:
    return str(ok(ctx.user.client.post("/working-groups", json={"name": "audited"}))["id"])


def _member(ctx: Ctx) -> tuple[str, str]:
    room_id, other = _room(ctx), str(uuid.uuid4())
    ok(ctx.user.client.post(f"/working-groups/{room_id}/members", json={"user_id": other, "role": "member"}))
    return room_id, other


def _delegation(ctx: Ctx) -> str:
    body = {"group_id": _room(ctx), "delegation_scope": ["read"], "expiry_seconds": 600}
    issued = ok(ctx.user.client.post("/auth/delegation/jwt", json=body))
    return str(issued["delegation_token_id"])


def _webhook(ctx: Ctx) -> str:
    body = {"url": "http://127.0.0.1:9/audited", "events": ["audit.event"]}
    return str(ok(ctx.admin.client.post("/webhooks", json=body))["id"])


def _agent() -> dict[str, Any]:
    spec = {
        "id": f"agent-{uuid.uuid4().hex[:10]}",
        "version": "1",
        "display_name": "Helper",
        "role": "assistant",
        "goal": "Help",
        "source": "user",
        "system_prompt": "You help.",
    }
    return spec


def _unrecorded(ctx: Ctx, rid: str, path: str, body: dict[str, Any], token: str | None = None) -> None:
    """Sign-in answers carry tokens: sent outside the leak recorder, their tokens registered after."""
    headers = {"x-request-id": rid, **({"authorization": f"Bearer {token}"} if token else {})}
    with httpx.Client(base_url=ctx.gateway.url, timeout=30.0) as client:
        answer = ok(client.post(path, json=body, headers=headers))
    for name in ("token", "refresh_token", "api_key"):
        if isinstance(answer, dict) and name in answer:
            RECORDER.remember_secret(answer[name])


Recipe = Callable[[Ctx, str], None]


def _sign_in(ctx: Ctx, rid: str) -> None:
    account = make_account(ctx.gateway)
    _unrecorded(ctx, rid, "/auth/login", {"email": account.email, "password": account.password})


def _refresh(ctx: Ctx, rid: str) -> None:
    refresh = login(ctx.gateway, make_account(ctx.gateway))["refresh_token"]
    _unrecorded(ctx, rid, "/auth/refresh", {"refresh_token": refresh})


def _exchange(ctx: Ctx, rid: str) -> None:
    key = issue_key(ctx.gateway, ctx.user.token)["api_key"]
    _unrecorded(ctx, rid, "/auth/api-key", {"api_key": key})


def _created_credential(ctx: Ctx, rid: str) -> None:
    secret = RECORDER.remember_secret("sk-" + uuid.uuid4().hex)
    send(
        ctx.user.client,
        "POST",
        "/llm-credentials",
        rid,
        {"provider": "openai", "secret": secret, "scope": "user"},
    )


def _leave(ctx: Ctx, rid: str) -> None:
    economy = _economy(ctx)
    ok(ctx.admin.client.post(f"/economies/{economy}/participants", json={"user_id": str(ctx.user.id)}))
    send(ctx.admin.client, "DELETE", f"/economies/{economy}/participants/{ctx.user.id}", rid)


def _retire(ctx: Ctx, rid: str) -> None:
    spec = _agent()
    ok(ctx.user.client.post("/agents", json=spec))
    send(ctx.user.client, "POST", f"/agents/{spec['id']}/versions/1/retire", rid)


RECIPES: dict[tuple[str, str], tuple[str, Recipe]] = {
    ("POST", "/llm-credentials"): ("credential.create", _created_credential),
    ("PATCH", "/llm-credentials/{credential_id}"): (
        "credential.update",
        lambda c, r: send(c.user.client, "PATCH", f"/llm-credentials/{_credential(c)}", r, {"label": "new"}),
    ),
    ("DELETE", "/llm-credentials/{credential_id}"): (
        "credential.delete",
        lambda c, r: send(c.user.client, "DELETE", f"/llm-credentials/{_credential(c)}", r),
    ),
    ("POST", "/economies"): (
        "economy.create",
        lambda c, r: send(
            c.admin.client, "POST", "/economies", r, {"slug": f"e-{uuid.uuid4().hex[:8]}", "name": "E"}
        ),
    ),
    ("PATCH", "/economies/{economy}"): (
        "economy.update",
        lambda c, r: send(c.admin.client, "PATCH", f"/economies/{_economy(c)}", r, {"name": "Renamed"}),
    ),
    ("DELETE", "/economies/{economy}"): (
        "economy.delete",
        lambda c, r: send(c.admin.client, "DELETE", f"/economies/{_economy(c)}", r),
    ),
    ("POST", "/economies/{economy}/participants"): (
        "economy_participant.create",
        lambda c, r: send(
            c.admin.client, "POST", f"/economies/{_economy(c)}/participants", r, {"user_id": str(c.user.id)}
        ),
    ),
    ("DELETE", "/economies/{economy}/participants/{participant_id}"): (
        "economy_participant.delete",
        _leave,
    ),
    ("POST", "/limits"): (
        "limit.create",
        lambda c, r: send(
            c.admin.client,
            "POST",
            "/limits",
            r,
            {
                "subject_type": "user",
                "subject_id": str(c.user.id),
                "metric": "requests",
                "window": "day",
                "amount": "5",
            },
        ),
    ),
    ("PATCH", "/limits/{limit_id}"): (
        "limit.update",
        lambda c, r: send(c.admin.client, "PATCH", f"/limits/{_limit(c)}", r, {"amount": "7"}),
    ),
    ("DELETE", "/limits/{limit_id}"): (
        "limit.delete",
        lambda c, r: send(c.admin.client, "DELETE", f"/limits/{_limit(c)}", r),
    ),
    ("POST", "/auth/login"): ("auth.sign_in", _sign_in),
    ("POST", "/auth/refresh"): ("auth.sign_in", _refresh),
    ("POST", "/auth/api-key"): ("auth.sign_in", _exchange),
    ("POST", "/auth/api-key/generate"): (
        "api_key.create",
        lambda c, r: _unrecorded(
            c, r, "/auth/api-key/generate", {"service_name": "s", "description": "d"}, c.user.token
        ),
    ),
    ("POST", "/auth/api-keys/{key_id}/revoke"): (
        "api_key.revoke",
        lambda c, r: send(
            c.user.client, "POST", f"/auth/api-keys/{issue_key(c.gateway, c.user.token)['id']}/revoke", r
        ),
    ),
    ("POST", "/auth/delegation/jwt"): (
        "delegation_token.create",
        lambda c, r: _unrecorded(
            c,
            r,
            "/auth/delegation/jwt",
            {"group_id": _room(c), "delegation_scope": ["read"], "expiry_seconds": 60},
            c.user.token,
        ),
    ),
    ("DELETE", "/auth/delegation/tokens/{token_id}"): (
        "delegation_token.revoke",
        lambda c, r: send(c.user.client, "DELETE", f"/auth/delegation/tokens/{_delegation(c)}", r),
    ),
    ("DELETE", "/auth/delegation-tokens/{token_id}"): (
        "delegation_token.revoke",
        lambda c, r: send(c.user.client, "DELETE", f"/auth/delegation-tokens/{_delegation(c)}", r),
    ),
    ("POST", "/working-groups"): (
        "room.create",
        lambda c, r: send(c.user.client, "POST", "/working-groups", r, {"name": "a room"}),
    ),
    ("PATCH", "/working-groups/{room_id}"): (
        "room.update",
        lambda c, r: send(c.user.client, "PATCH", f"/working-groups/{_room(c)}", r, {"name": "renamed"}),
    ),
    ("DELETE", "/working-groups/{room_id}"): (
        "room.delete",
        lambda c, r: send(c.user.client, "DELETE", f"/working-groups/{_room(c)}", r),
    ),
    ("POST", "/working-groups/{room_id}/members"): (
        "room_member.create",
        lambda c, r: send(
            c.user.client,
            "POST",
            f"/working-groups/{_room(c)}/members",
            r,
            {"user_id": str(uuid.uuid4()), "role": "viewer"},
        ),
    ),
    ("PATCH", "/working-groups/{room_id}/members/{user_id}"): (
        "room_member.update",
        lambda c, r: send(
            c.user.client,
            "PATCH",
            "/working-groups/{}/members/{}".format(*_member(c)),
            r,
            {"role": "manager"},
        ),
    ),
    ("DELETE", "/working-groups/{room_id}/members/{user_id}"): (
        "room_member.delete",
        lambda c, r: send(c.user.client, "DELETE", "/working-groups/{}/members/{}".format(*_member(c)), r),
    ),
    ("POST", "/webhooks"): (
        "webhook.create",
        lambda c, r: send(
            c.admin.client,
            "POST",
            "/webhooks",
            r,
            {"url": "http://127.0.0.1:9/a", "events": ["limit.refused"]},
        ),
    ),
    ("PATCH", "/webhooks/{webhook_id}"): (
        "webhook.update",
        lambda c, r: send(c.admin.client, "PATCH", f"/webhooks/{_webhook(c)}", r, {"active": False}),
    ),
    ("DELETE", "/webhooks/{webhook_id}"): (
        "webhook.delete",
        lambda c, r: send(c.admin.client, "DELETE", f"/webhooks/{_webhook(c)}", r),
    ),
    ("POST", "/agents"): ("agent.create", lambda c, r: send(c.user.client, "POST", "/agents", r, _agent())),
    ("POST", "/agents/{agent_id}/versions/{version}/retire"): ("agent.retire", _retire),
}


def mutating_routes(gateway: Gateway) -> list[tuple[str, str]]:
    document = gateway.client().get("/openapi.json").json()
    return sorted(
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    )


def test_every_mutating_route_has_a_recipe_or_a_reason(gateway: Gateway) -> None:
    missing = [
        route for route in mutating_routes(gateway) if route not in RECIPES and route not in NOT_CHANGES
    ]
    assert missing == [], f"mutating routes with no audit test: {missing}"


@pytest.mark.parametrize("route", sorted(RECIPES), ids=lambda r: f"{r[0]} {r[1]}")
def test_the_route_writes_an_audit_event_in_its_request(gateway: Gateway, route: tuple[str, str]) -> None:
    action, recipe = RECIPES[route]
    ctx = Ctx(gateway, gateway.user("Admin"), gateway.user("Manager"))
    rid = f"audit-{uuid.uuid4().hex}"
    recipe(ctx, rid)
    found = ok(ctx.admin.client.get("/audit", params={"action": action, "limit": 500}))["data"]
    mine = [event for event in found if event["request_id"] == rid]
    assert [event["action"] for event in mine] == [action]
