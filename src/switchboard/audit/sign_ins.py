"""Sign-ins in the audit trail: a success in the sign-in's transaction, a failure in one of its own.

A failed sign-in rolls its request's transaction back (the 401 is an exception), so its event is
committed apart, with the same request id and address (a refresh commits its own transaction).
Per-call API-key authentication is not a sign-in (it would put an audit append on every /v1
call); `POST /auth/login`, the key-for-token exchange `POST /auth/api-key` and the token grant
`POST /auth/refresh` are.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.audit.chain import record
from switchboard.audit.events import Actor, Change, Origin
from switchboard.audit.origin import ORIGIN_KEY, origin_of

SUCCEEDED = "auth.sign_in"
FAILED = "auth.sign_in_failed"


async def succeeded(
    session: AsyncSession,
    *,
    method: str,
    user_id: uuid.UUID,
    role: str,
    email: str | None,
    api_key_id: uuid.UUID | None = None,
) -> None:
    found = origin_of(session.info)
    actor = Actor(
        user_id=str(user_id),
        role=role,
        auth_method=method,
        api_key_id=str(api_key_id) if api_key_id else None,
    )
    change = Change(SUCCEEDED, "user", str(user_id), {"method": [None, method], "email": [None, email]})
    await record(session, change, Origin(actor, found.request_id, found.ip))


async def failed(
    session: AsyncSession,
    sessionmaker: async_sessionmaker[AsyncSession] | None,
    *,
    method: str,
    email: str | None = None,
) -> None:
    found = origin_of(session.info)
    origin = Origin(Actor(auth_method="anonymous"), found.request_id, found.ip)
    change = Change(FAILED, "user", None, {"method": [None, method], "email": [None, email]})
    if sessionmaker is None:  # the session commits although the answer is a 401
        await record(session, change, origin)
        return
    async with sessionmaker() as apart, apart.begin():
        apart.info[ORIGIN_KEY] = origin
        await record(apart, change)
