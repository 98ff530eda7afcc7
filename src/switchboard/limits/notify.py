"""Tells this process's limit registry (`app.state.limits`) that limits changed, once that is committed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession


def _registry(request: Request) -> Any:
    # Absent until the enforcement side starts it (and in apps built without it).
    return getattr(request.app.state, "limits", None)


LimitRegistry = Annotated[Any, Depends(_registry)]


def on_commit(session: AsyncSession, registry: Any) -> None:
    """Call `registry.changed()` after this session's transaction commits, not before: a reload in
    between would read the old rows and count as fresh. Other replicas reload on their own timer."""
    changed = getattr(registry, "changed", None)
    if changed is None:
        return
    event.listen(session.sync_session, "after_commit", lambda _session: changed(), once=True)
