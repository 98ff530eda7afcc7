"""`switchboard key create --email E`: an API key for a password account, printed once on stdout."""

from __future__ import annotations

import argparse
import asyncio
import sys

from pydantic import ValidationError
from sqlalchemy import select

from switchboard.auth import api_keys
from switchboard.auth.context import AuthContext
from switchboard.auth.models import User
from switchboard.auth.principal import ROLE_DEFAULT_PERMISSIONS, Principal
from switchboard.auth.schemas import ApiKeyIssueRequest
from switchboard.auth.tokens import TokenCodec
from switchboard.auth.users import normalise_email
from switchboard.db.engine import make_engine
from switchboard.db.migrate import upgrade
from switchboard.errors import SwitchboardError
from switchboard.settings import Settings, load_settings


async def _issue(settings: Settings, email: str, request: ApiKeyIssueRequest) -> str:
    secret = settings.jwt_secret.get_secret_value()
    engine = make_engine(settings.database_url)
    try:
        await upgrade(engine)
        context = AuthContext.build(TokenCodec(secret, settings.jwt_audience), secret, engine)
        async with context.sessionmaker() as session, session.begin():
            user = await session.scalar(select(User).where(User.email == normalise_email(email)))
            if user is None:
                raise SwitchboardError(
                    f"no user {email!r}: create one with `switchboard user create --email …`"
                )
            # The same key `POST /auth/api-key/generate` would give the user signed in with a password.
            owner = Principal(
                user_id=user.id,
                role=user.role,
                permissions=frozenset(ROLE_DEFAULT_PERMISSIONS.get(user.role, ())),
                email=user.email,
                auth_method="jwt",
            )
            issued = await api_keys.issue(context, session, owner, request)
            return issued.api_key
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    try:
        request = ApiKeyIssueRequest(service_name=args.name, description=args.description)
    except ValidationError:
        print("switchboard: --name is 1 to 100 characters, --description at most 500", file=sys.stderr)
        return 2
    try:
        key = asyncio.run(_issue(settings, args.email, request))
    except SwitchboardError as error:
        print(f"switchboard: {error.message}", file=sys.stderr)
        return 1
    print(key)
    print(
        "switchboard: the key is shown only this once; keep it (revoke with POST /auth/api-keys/{id}/revoke)",
        file=sys.stderr,
    )
    return 0
