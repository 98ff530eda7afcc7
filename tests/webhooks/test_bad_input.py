"""Bad webhook input is a clear 400/422 with nothing stored (SPEC §22, §21 for the URL)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import GatewayFactory
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support.gateway import Gateway, User
from tests.webhooks.conftest import create_webhook, new_path, post_webhook


def _count(gateway: Gateway) -> int:
    async def run() -> int:
        from sqlalchemy import func, select

        from switchboard.webhooks.models import WebhookRow

        async with gateway.app.state.sessionmaker() as session:
            return int(await session.scalar(select(func.count()).select_from(WebhookRow)) or 0)

    return int(gateway.server.call_soon(run()))


@pytest.fixture(scope="module")
def strict(make_gateway: GatewayFactory) -> Gateway:
    """Without SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS, as in production."""
    return make_gateway(env={"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false"})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"events": ["budget.exceeded"]}, "events"),
        ({"events": []}, "events"),
        ({"events": "audit.event"}, "events"),
        ({"events": [7]}, "events"),
        ({"events": None}, "events"),
        ({"url": 5}, "url"),
        ({"url": ""}, "url"),
        ({"active": "yes"}, "active"),
        ({"economy_id": 3}, "economy_id"),
        ({"secret": "whsec_mine"}, "secret"),
    ],
)
def test_malformed_input_is_400_and_nothing_is_stored(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver, body: dict[str, Any], field: str
) -> None:
    before = _count(hooks_gateway)
    full = {"url": receiver.base_url + new_path(), "events": ["audit.event"], **body}
    response = post_webhook(hooks_gateway.url, admin, full)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"
    assert field in response.json()["error"]
    assert _count(hooks_gateway) == before


def test_an_unknown_event_is_named_with_the_known_ones(hooks_gateway: Gateway, admin: User) -> None:
    response = post_webhook(
        hooks_gateway.url,
        admin,
        {"url": "https://example.com/hook", "events": ["audit.event", "budget.exceeded"]},
    )
    assert response.status_code == 400
    message = response.json()["error"]
    assert "budget.exceeded" in message and "budget.threshold" in message


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",  # http only with the private-upstreams setting
        "https://127.0.0.1/hook",
        "https://localhost:8443/hook",
        "https://10.1.2.3/hook",
        "https://[::1]/hook",
        "https://169.254.169.254/latest",
        "https://2130706433/hook",
        "ftp://example.com/hook",
        "https://example.com/hook?token=1",
        "https://user:pass@example.com/hook",
        "https://exa mple.com/hook",
        "https://example.com/\x00hook",
    ],
)
def test_a_refused_url_is_422_and_nothing_is_stored(strict: Gateway, url: str) -> None:
    admin = strict.user(role="Admin")
    before = _count(strict)
    response = post_webhook(strict.url, admin, {"url": url, "events": ["audit.event"]})
    assert response.status_code == 422, response.text
    assert response.json()["error"].startswith("url is refused")
    assert _count(strict) == before


def test_a_refused_url_on_patch_changes_nothing(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"])
    response = admin.client.patch(
        f"/webhooks/{hook['id']}", json={"url": "https://exa mple.com/x", "events": []}
    )
    assert response.status_code == 400
    response = admin.client.patch(f"/webhooks/{hook['id']}", json={"url": "gopher://example.com/x"})
    assert response.status_code == 422
    assert admin.client.get(f"/webhooks/{hook['id']}").json()["url"] == hook["url"]


@pytest.mark.parametrize(
    "params", [{"status": "lost"}, {"limit": 0}, {"limit": 501}, {"cursor": "not-a-cursor"}, {"limit": "x"}]
)
def test_a_malformed_deliveries_filter_is_400(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver, params: dict[str, Any]
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"])
    response = admin.client.get(f"/webhooks/{hook['id']}/deliveries", params=params)
    assert response.status_code == 400, response.text


def test_an_unknown_economy_is_404_and_nothing_is_stored(hooks_gateway: Gateway, admin: User) -> None:
    before = _count(hooks_gateway)
    response = post_webhook(
        hooks_gateway.url,
        admin,
        {"url": "https://example.com/hook", "events": ["audit.event"], "economy_id": "no-such-economy"},
    )
    assert response.status_code == 404
    assert _count(hooks_gateway) == before
