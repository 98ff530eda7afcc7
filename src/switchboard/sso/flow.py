"""The console's "Sign in with SSO": authorization code with PKCE (S256), `state` and `nonce`.

`start` records the state (as a keyed hash) and sends the browser to the issuer; `finish` (the
callback) claims the state once, trades the code for tokens, verifies the ID token with its nonce,
and leaves a one-time ticket that the console trades at `session` for a session, opened by the same
function a password sign-in uses. The PKCE verifier and the nonce are keyed hashes of the state, so
nothing secret is stored, and a state works on whichever replica the browser comes back to.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlencode

import httpx
from sqlalchemy import delete, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.audit import sign_ins
from switchboard.audit.origin import SCOPE_KEY
from switchboard.auth.context import AuthContext
from switchboard.auth.hashing import KeyedHasher
from switchboard.auth.models import User
from switchboard.auth.refresh import open_family
from switchboard.auth.schemas import LoginResult
from switchboard.auth.sign_in import Identity
from switchboard.errors import Unauthorized
from switchboard.kit.clock import utcnow
from switchboard.sso import accounts
from switchboard.sso.config import OidcSettings
from switchboard.sso.issuer import Issuer, IssuerUnavailable
from switchboard.sso.models import SsoLogin
from switchboard.sso.verify import TokenVerifier

log = logging.getLogger("switchboard.sso")

STATE_TTL = timedelta(minutes=10)  # from "Sign in with SSO" to the issuer sending the browser back
TICKET_TTL = timedelta(minutes=1)  # from the callback to the console trading its ticket
KEEP = timedelta(days=1)  # finished and abandoned sign-ins are deleted after this
INVALID_TICKET = "this sign-in has expired or was already used; sign in again"


class SignInRefused(Unauthorized):
    """The callback cannot complete this sign-in; the message is for the person in the browser."""


@dataclass(frozen=True)
class Hashers:
    state: KeyedHasher
    ticket: KeyedHasher
    verifier: KeyedHasher
    nonce: KeyedHasher

    @classmethod
    def build(cls, jwt_secret: str) -> Hashers:
        return cls(
            *(KeyedHasher(jwt_secret, f"sso-{purpose}") for purpose in ("state", "ticket", "pkce", "nonce"))
        )


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def _rowcount(result: Any) -> int:
    return cast(CursorResult[Any], result).rowcount


class SsoFlow:
    def __init__(
        self,
        settings: OidcSettings,
        issuer: Issuer,
        verifier: TokenVerifier,
        client: httpx.AsyncClient,
        sessionmaker: async_sessionmaker[AsyncSession],
        hashers: Hashers,
        redirect_uri: str,
    ) -> None:
        self.settings = settings
        self.issuer = issuer
        self.verifier = verifier
        self._client = client
        self._sessionmaker = sessionmaker
        self._hash = hashers
        self.redirect_uri = redirect_uri

    async def start(self) -> tuple[str, str]:
        """The issuer's authorization URL for a new sign-in, and its state (for the browser's cookie)."""
        metadata = await self.issuer.metadata()
        state = secrets.token_urlsafe(32)
        now = utcnow()
        async with self._sessionmaker() as session, session.begin():
            await session.execute(delete(SsoLogin).where(SsoLogin.created_at < now - KEEP))
            session.add(SsoLogin(id=uuid.uuid4(), state_hash=self._hash.state(state), created_at=now))
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.client_id,
                "redirect_uri": self.redirect_uri,
                "scope": self.settings.scopes,
                "state": state,
                "nonce": self._hash.nonce(state),
                "code_challenge": _challenge(self._hash.verifier(state)),
                "code_challenge_method": "S256",
            }
        )
        glue = "&" if "?" in metadata.authorization_endpoint else "?"
        return f"{metadata.authorization_endpoint}{glue}{query}", state

    async def finish(
        self, *, state: str | None, cookie: str | None, code: str | None, error: str | None
    ) -> str:
        """The callback: a one-time ticket for the console, or SignInRefused."""
        # The state must come back to the browser that asked for it (login CSRF), and only once.
        if not state or not cookie or not hmac.compare_digest(state.encode(), cookie.encode()):
            raise SignInRefused("this sign-in was not started in this browser; sign in again")
        now = utcnow()
        async with self._sessionmaker() as session, session.begin():
            claimed = await session.execute(
                update(SsoLogin)
                .where(
                    SsoLogin.state_hash == self._hash.state(state),
                    SsoLogin.used_at.is_(None),
                    SsoLogin.created_at > now - STATE_TTL,
                )
                .values(used_at=now)
                .execution_options(synchronize_session=False)
            )
        if _rowcount(claimed) != 1:
            raise SignInRefused("this sign-in link has expired or was already used; sign in again")
        if error or not code:
            # The issuer's own refusal (access_denied, …): its code is safe to show, its text is not ours.
            reason = error if error and error.replace("_", "").isalnum() and len(error) < 64 else "no code"
            raise SignInRefused(f"the identity provider did not sign you in ({reason})")
        id_token = await self._redeem(code, self._hash.verifier(state))
        claims = await self.verifier.claims(id_token, nonce=self._hash.nonce(state))
        role = self.settings.role_of(claims)
        user = await accounts.account(self._sessionmaker, self.settings.issuer, claims, role, refresh=True)
        ticket = secrets.token_urlsafe(32)
        async with self._sessionmaker() as session, session.begin():
            await session.execute(
                update(SsoLogin)
                .where(SsoLogin.state_hash == self._hash.state(state))
                .values(user_id=user.id, ticket_hash=self._hash.ticket(ticket))
                .execution_options(synchronize_session=False)
            )
        return ticket

    async def _redeem(self, code: str, verifier: str) -> str:
        metadata = await self.issuer.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "client_id": self.settings.client_id,
        }
        secret = self.settings.client_secret
        # client_secret_basic for a confidential client; a public one is known by client_id and PKCE.
        try:
            if secret is not None:
                basic = httpx.BasicAuth(self.settings.client_id, secret.get_secret_value())
                response = await self._client.post(metadata.token_endpoint, data=form, auth=basic)
            else:
                response = await self._client.post(metadata.token_endpoint, data=form)
        except httpx.HTTPError as exc:
            log.warning("token endpoint unreachable: %s", type(exc).__name__)
            raise IssuerUnavailable() from None
        try:
            body = response.json() if response.status_code == 200 else None
        except ValueError:
            body = None
        id_token = body.get("id_token") if isinstance(body, dict) else None
        if not isinstance(id_token, str):
            # invalid_grant (a code used twice, a wrong verifier), invalid_client, …: the code is spent.
            log.warning("token endpoint refused the code: HTTP %s", response.status_code)
            raise SignInRefused("the identity provider refused this sign-in; sign in again")
        return id_token

    async def session(
        self, context: AuthContext, ticket: str, request_scope: Mapping[str, Any] | None = None
    ) -> LoginResult:
        """Trades a callback's ticket, once, for a console session like a password sign-in's; the
        sign-in is audited (`auth.sign_in`, method `sso`) with the request's id and address."""
        now = utcnow()
        async with context.sessionmaker() as session, session.begin():
            if request_scope is not None:
                session.info[SCOPE_KEY] = request_scope
            digest = self._hash.ticket(ticket)
            claimed = await session.execute(
                update(SsoLogin)
                .where(
                    SsoLogin.ticket_hash == digest,
                    SsoLogin.ticket_used_at.is_(None),
                    SsoLogin.used_at > now - TICKET_TTL,
                )
                .values(ticket_used_at=now)
                .execution_options(synchronize_session=False)
            )
            if _rowcount(claimed) != 1:
                raise Unauthorized(INVALID_TICKET)
            user_id = await session.scalar(select(SsoLogin.user_id).where(SsoLogin.ticket_hash == digest))
            user = await session.get(User, user_id) if user_id is not None else None
            if user is None:
                raise Unauthorized(INVALID_TICKET)
            await sign_ins.succeeded(session, method="sso", user_id=user.id, role=user.role, email=user.email)
            return await open_family(context, session, Identity.of_user(user.id, user.email, user.role))
