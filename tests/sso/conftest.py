"""A real OpenID provider (node's oidc-provider, started from tests/sso/provider.mjs) and a gateway
configured for it. Both listen on ports picked first, because each must name the other: the
provider's client has the gateway's callback URL, and the gateway's issuer is the provider's URL.

The provider's signing keys are made here and handed to it, so that a test can also sign a token with
the provider's own key and a chosen claim wrong (a wrong audience, an expired token, …).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from tests.conftest import default_test_config
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, build_settings, start_gateway, write_config

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_MODULE = ROOT / ".venv" / "oidc" / "node_modules" / "oidc-provider" / "lib" / "index.js"
NODE = "node"
CLIENT_ID = "switchboard-console"
CLIENT_SECRET = "client-secret-" + "s" * 32
ROLE_CLAIM = "groups"
ROLE_MAP = {"switchboard-admins": "Admin", "switchboard-readers": "Viewer"}
# Logins of the provider's dev login form, with the claims the provider gives them.
ACCOUNTS = {
    "ada": {"email": "ada@example.test", ROLE_CLAIM: ["engineering", "switchboard-admins"]},
    "bert": {"email": "bert@example.test", ROLE_CLAIM: ["switchboard-readers"]},
}

needs_provider = pytest.mark.skipif(
    not PROVIDER_MODULE.exists(),
    reason="oidc-provider is not installed (scripts/test install puts it into .venv/oidc with npm)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def signing_keys() -> KeySet:
    """One key of each algorithm the gateway accepts, each with a fresh `kid`."""
    tag = uuid.uuid4().hex[:8]
    return KeySet(
        [
            RSAKey.generate_key(2048, parameters={"kid": f"rsa-{tag}", "alg": "RS256", "use": "sig"}),
            ECKey.generate_key("P-256", parameters={"kid": f"ec-{tag}", "alg": "ES256", "use": "sig"}),
            OKPKey.generate_key("Ed25519", parameters={"kid": f"ed-{tag}", "alg": "EdDSA", "use": "sig"}),
            # RFC 9864's fully-specified name for EdDSA on Ed25519, which deprecates "EdDSA" in JOSE
            OKPKey.generate_key(
                "Ed25519", parameters={"kid": f"ed25519-{tag}", "alg": "Ed25519", "use": "sig"}
            ),
        ]
    )


def private_jwks(keys: KeySet) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=True) for key in keys.keys]}


@dataclass
class IdentityProvider:
    issuer: str
    keys: KeySet
    process: subprocess.Popen[bytes]
    log: Path
    rotations: list[KeySet] = field(default_factory=list)

    def key(self, alg: str) -> Any:
        return next(key for key in self.keys.keys if key.alg == alg)

    def sign(self, claims: dict[str, Any], alg: str = "RS256", key: Any = None, **header: Any) -> str:
        """A token signed with the provider's own key (or `key`), with exactly these claims."""
        signer = key if key is not None else self.key(alg)
        return jwt.encode({"alg": alg, "kid": signer.kid, **header}, claims, signer, algorithms=[alg])

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """Claims the gateway accepts; a test overrides one to make them wrong."""
        now = int(time.time())
        base = {"iss": self.issuer, "aud": CLIENT_ID, "sub": "ada", "iat": now, "exp": now + 300}
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def rotate(self) -> KeySet:
        """The provider signs with new keys from now on (and publishes only those)."""
        self.keys = signing_keys()
        self.rotations.append(self.keys)
        response = httpx.post(f"{self.issuer}/__test/keys", json=private_jwks(self.keys), timeout=10)
        assert response.status_code == 204, response.text
        return self.keys

    def jwks_fetches(self) -> int:
        return int(httpx.get(f"{self.issuer}/__test/stats", timeout=10).json()["jwks_fetches"])

    def client_credentials_token(self) -> str:
        """An access token the provider itself issues (a JWT for the gateway, `aud` the client id)."""
        response = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": "llm"},
            auth=(CLIENT_ID, CLIENT_SECRET),
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])


def start_provider(directory: Path, port: int, redirect_uri: str) -> IdentityProvider:
    keys = signing_keys()
    issuer = f"http://127.0.0.1:{port}"
    config = {
        "module": str(PROVIDER_MODULE),
        "port": port,
        "issuer": issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uri": redirect_uri,
        "role_claim": ROLE_CLAIM,
        "accounts": ACCOUNTS,
        "jwks": private_jwks(keys),
    }
    config_path = directory / f"oidc-{port}.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    log = directory / f"oidc-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [NODE, str(Path(__file__).with_name("provider.mjs")), str(config_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NODE_ENV": "test"},
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"oidc-provider exited: {log.read_text()}")
        try:
            if httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2).status_code == 200:
                return IdentityProvider(issuer=issuer, keys=keys, process=process, log=log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.terminate()
    raise RuntimeError(f"oidc-provider did not start: {log.read_text()}")


@dataclass
class SsoSetup:
    gateway: Gateway
    idp: IdentityProvider


@pytest.fixture(scope="module")
def sso(session_dir: Path, databases: DatabaseFactory, fake_provider: Any) -> Iterator[SsoSetup]:
    if not PROVIDER_MODULE.exists():
        pytest.skip("oidc-provider is not installed (scripts/test install puts it into .venv/oidc)")
    import asyncio

    gateway_port, provider_port = free_port(), free_port()
    gateway_url = f"http://127.0.0.1:{gateway_port}"
    data_dir = session_dir / f"sso-{uuid.uuid4().hex[:8]}"
    data_dir.mkdir()
    idp = start_provider(data_dir, provider_port, gateway_url + "/auth/sso/callback")
    env = {
        "SWITCHBOARD_PUBLIC_URL": gateway_url,
        "SWITCHBOARD_OIDC_ISSUER": idp.issuer,
        "SWITCHBOARD_OIDC_CLIENT_ID": CLIENT_ID,
        "SWITCHBOARD_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "SWITCHBOARD_OIDC_ROLE_CLAIM": ROLE_CLAIM,
        "SWITCHBOARD_OIDC_ROLE_MAP": json.dumps(ROLE_MAP),
        "SWITCHBOARD_OIDC_SCOPES": "openid email profile groups",
    }
    config_path = write_config(data_dir, default_test_config(fake_provider.base_url))
    settings = build_settings(data_dir, asyncio.run(databases.create()), config_path, env)
    gateway = start_gateway(settings, port=gateway_port)
    try:
        yield SsoSetup(gateway=gateway, idp=idp)
    finally:
        gateway.stop()
        idp.process.terminate()
        idp.process.wait(timeout=10)
