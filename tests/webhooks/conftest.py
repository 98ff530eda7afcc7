"""Webhooks fixtures: a receiver on a real port, a gateway whose first retry comes quickly, helpers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER, tls_context
from tests.support.servers import ServerThread

PRICED = "wh-priced"  # 1 USD per million tokens in and out: 1,000 nano-units a token
FIRST_RETRY = "0.2"


def webhooks_config(provider_url: str) -> dict[str, Any]:
    config = default_test_config(provider_url)
    config["models"].append(
        {"provider": "openai", "model": PRICED, "input_per_mtok": "1", "output_per_mtok": "1"}
    )
    return config


@pytest.fixture(scope="session")
def receiver() -> Iterator[WebhookReceiver]:
    app = WebhookReceiver()
    server = ServerThread(app, name="webhook-receiver").start()
    app.base_url = server.url
    yield app
    server.stop()


@pytest.fixture(scope="session")
def hooks_gateway(make_session_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    return make_session_gateway(
        config=webhooks_config(fake_provider.base_url),
        env={"SWITCHBOARD_WEBHOOK_FIRST_RETRY_SECONDS": FIRST_RETRY},
    )


@pytest.fixture()
def admin(hooks_gateway: Gateway) -> User:
    return hooks_gateway.user(role="Admin")


def new_path() -> str:
    return f"/hook/{uuid.uuid4().hex[:12]}"


def post_webhook(url: str, user: User, body: dict[str, Any]) -> httpx.Response:
    """POST /webhooks off the recorder: its answer holds the secret, shown once by design; the
    secret is then watched for in every other answer."""
    with httpx.Client(base_url=url, timeout=30.0, verify=tls_context()) as client:
        response = client.post("/webhooks", json=body, headers={"authorization": f"Bearer {user.token}"})
    if response.status_code == 201:
        RECORDER.remember_secret(response.json()["secret"])
    return response


def create_webhook(
    url: str, user: User, receiver: WebhookReceiver, events: list[str], path: str | None = None, **fields: Any
) -> dict[str, Any]:
    """A webhook to a fresh path of the receiver, which learns its secret."""
    path = path or new_path()
    response = post_webhook(url, user, {"url": receiver.base_url + path, "events": events, **fields})
    assert response.status_code == 201, response.text
    created = dict(response.json())
    receiver.secrets[path] = created["secret"]
    created["path"] = path
    return created


def flush(gateway: Gateway) -> None:
    """The gateway's dispatcher writes what it was handed and attempts every delivery due, now."""
    gateway.server.call_soon(gateway.app.state.webhook_dispatcher.tick())


def deliveries(client: httpx.Client, webhook_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/webhooks/{webhook_id}/deliveries", params=params)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])
