"""SSO start-up: when SWITCHBOARD_OIDC_ISSUER is set, an HTTP client through the egress guard for
the issuer, the token verifier plugged into the Authenticator, and the console's sign-in flow."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from switchboard import API_VERSION
from switchboard.auth.authenticator import Authenticator
from switchboard.auth.context import AuthContext
from switchboard.settings import Settings
from switchboard.sso.bearer import SsoBearer
from switchboard.sso.flow import Hashers, SsoFlow
from switchboard.sso.issuer import Issuer
from switchboard.sso.router import CALLBACK
from switchboard.sso.verify import TokenVerifier
from switchboard.upstream.egress import Egress
from switchboard.upstream.guard import EgressTransport

TIMEOUT_SECONDS = 10.0


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    app.state.sso = None
    app.state.sso_client = None
    oidc = settings.oidc
    if oidc is None:
        return
    # The issuer is reached like a provider (SPEC §21): a public address unless
    # SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS, the egress proxy and CA bundle, no redirects followed.
    transport = EgressTransport(
        allow_private=settings.allow_private_upstreams,
        limits=httpx.Limits(max_connections=10, max_keepalive_connections=2, keepalive_expiry=30.0),
        connect_timeout=settings.upstream_connect_timeout,
        egress=Egress(proxy=settings.egress_proxy, ca_bundle=settings.ca_bundle),
    )
    client = httpx.AsyncClient(
        transport=transport,
        timeout=TIMEOUT_SECONDS,
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": f"switchboard/{API_VERSION}"},
    )
    app.state.sso_client = client
    issuer = Issuer(oidc.issuer, client)
    verifier = TokenVerifier(issuer, oidc.client_id, settings.jwt_leeway_seconds)
    auth: AuthContext = app.state.auth
    authenticator: Authenticator = app.state.authenticator
    authenticator.external = SsoBearer(oidc, verifier, auth.sessionmaker)
    app.state.sso = SsoFlow(
        oidc,
        issuer,
        verifier,
        client,
        auth.sessionmaker,
        Hashers.build(settings.jwt_secret.get_secret_value()),
        redirect_uri=settings.public_url + CALLBACK,
    )


async def shutdown(app: FastAPI) -> None:
    authenticator: Authenticator = app.state.authenticator
    authenticator.external = None
    app.state.sso = None
    client: httpx.AsyncClient | None = app.state.sso_client
    if client is not None:
        await client.aclose()
