"""Starts real Switchboard instances for tests and mints tokens for them."""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from switchboard.app import create_app
from switchboard.auth.tokens import TokenCodec
from switchboard.settings import Settings, load_settings
from tests.support.recorder import recording_client
from tests.support.servers import ServerThread

TEST_JWT_SECRET = "test-secret-" + "x" * 40
TEST_AUDIENCE = "svc-agents"


def test_encryption_keys(*kids: str) -> str:
    return ",".join(f"{kid}:{base64.b64encode(secrets.token_bytes(32)).decode()}" for kid in kids or ("k1",))


@dataclass
class TokenFactory:
    codec: TokenCodec

    def mint(self, *, sub: uuid.UUID | None = None, role: str = "User", **kwargs: Any) -> str:
        return self.codec.mint(sub=sub or uuid.uuid4(), role=role, **kwargs)

    def delegation(self, *, sub: uuid.UUID, room_id: uuid.UUID, scope: list[str], role: str = "User") -> str:
        return self.codec.mint(
            sub=sub,
            role=role,
            extra={
                "auth_method": "delegation",
                "acting_as": str(room_id),
                "delegation_scope": scope,
                "delegation_token_id": str(uuid.uuid4()),
            },
        )


@dataclass
class User:
    """A caller of the gateway: an id, a token, and a recording HTTP client."""

    id: uuid.UUID
    role: str
    token: str
    client: httpx.Client


@dataclass
class Gateway:
    settings: Settings
    server: ServerThread
    tokens: TokenFactory
    _clients: list[httpx.Client] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def app(self) -> Any:
        return self.server.app

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        client = recording_client(self.url, token, **kwargs)
        self._clients.append(client)
        return client

    def user(self, role: str = "User", *, sub: uuid.UUID | None = None, **claims: Any) -> User:
        sub = sub or uuid.uuid4()
        token = self.tokens.mint(sub=sub, role=role, **claims)
        return User(id=sub, role=role, token=token, client=self.client(token))

    def __post_init__(self) -> None:
        RUNNING.append(self)

    def close_clients(self) -> None:
        """Closes the HTTP clients made so far (users' included): each holds a kept-alive socket."""
        for client in self._clients:
            client.close()
        self._clients.clear()

    def stop(self, *, wait: bool = True) -> None:
        self.close_clients()
        RUNNING[:] = [gateway for gateway in RUNNING if gateway is not self]
        self.server.stop(wait=wait)


# The gateways of this process not stopped yet: a test file's clients of the gateways its tests share
# with other files are closed after its last test (tests/conftest.py).
RUNNING: list[Gateway] = []


def stop_gateways(gateways: list[Gateway]) -> None:
    """Asks every gateway to stop, then waits for them, so that their graceful shutdowns overlap."""
    for gateway in gateways:
        gateway.stop(wait=False)
    for gateway in gateways:
        gateway.server.join()
    gateways.clear()


def write_config(directory: Path, config: dict[str, Any] | str) -> Path:
    path = directory / f"switchboard-{uuid.uuid4().hex[:8]}.yaml"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config), encoding="utf-8")
    return path


def build_settings(
    data_dir: Path, database_url: str, config_path: Path, env: dict[str, str] | None = None
) -> Settings:
    base = {
        "SWITCHBOARD_ENV": "development",
        "SWITCHBOARD_DATA_DIR": str(data_dir),
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_JWT_SECRET": TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(config_path),
        "SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "true",
        "SWITCHBOARD_PUBLIC_URL": "https://gateway.example.test",
        "SWITCHBOARD_AUTH_URL": "https://auth.example.test",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_GIT_SHA": "testsha",
        # The suite keeps dozens of gateways open on one PostgreSQL server, each within this budget: room
        # for a call's own session beside the usage writer's and the limits ledger's connections, so a
        # loaded machine queues calls briefly rather than for an SDK's whole timeout.
        "SWITCHBOARD_DATABASE_POOL_SIZE": "4",
    }
    base.update(env or {})
    return load_settings(base)


def start_gateway(settings: Settings, *, fast_model_calls: bool = True, port: int = 0) -> Gateway:
    """`port`: one picked beforehand, for a gateway whose settings must name its own address."""
    server = ServerThread(
        create_app(settings, fast_model_calls=fast_model_calls), name="gateway", port=port
    ).start()
    codec = TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience)
    return Gateway(settings=settings, server=server, tokens=TokenFactory(codec))
