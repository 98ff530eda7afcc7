"""One database session (and transaction) per request, as a FastAPI dependency."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession


async def request_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.sessionmaker() as session, session.begin():
        # Who changes what in this transaction, for the audit trail (audit/origin.py reads it).
        session.info["request_scope"] = request.scope
        yield session


# scope="function": commit before the response goes out, so a 201 means stored.
DbSession = Annotated[AsyncSession, Depends(request_session, scope="function")]
