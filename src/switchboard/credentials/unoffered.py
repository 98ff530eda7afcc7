"""The start-up notice for stored credentials of provider kinds the gateway no longer offers.

A kind stops being offered when the pinned litellm cannot call it safely (upstream/providers.py:
NO_CHAT_ROUTE, UNGUARDED). Its stored credentials are kept, so that their owners see them and can
delete them, but no selector can name the kind any more, so they are never used for a call. Deleting
someone's key behind their back would be worse than an inert row; the operator is told once per start.
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.credentials.models import LlmCredential
from switchboard.upstream import providers

log = logging.getLogger("switchboard.credentials")


async def stored_unoffered(sessionmaker: async_sessionmaker[AsyncSession]) -> dict[str, int]:
    """How many stored credentials each kind that is no longer offered still has."""
    async with sessionmaker() as session:
        rows = await session.execute(
            select(LlmCredential.provider, func.count()).group_by(LlmCredential.provider)
        )
    return {kind: count for kind, count in rows if not providers.is_known(kind)}


async def warn_unoffered(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    try:
        found = await stored_unoffered(sessionmaker)
    except (SQLAlchemyError, OSError) as exc:  # a notice: never a reason not to start
        log.warning("could not look for credentials of kinds no longer offered: %s", type(exc).__name__)
        return
    for kind, count in sorted(found.items()):
        reason = providers.UNGUARDED.get(kind, "the pinned litellm cannot call it")
        log.warning(
            "%d stored credential(s) of provider %r are kept but never used for a call (%s); "
            "their owners may delete them (DELETE /llm-credentials/{id})",
            count,
            kind,
            reason,
        )
