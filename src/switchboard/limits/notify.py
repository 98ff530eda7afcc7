"""Tells this process's limit registry (`app.state.limits`) that limits changed, once that is committed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession


def on_commit(session: AsyncSession, registry: Any) -> None:
    """Call `registry.changed()` after this session's transaction commits, not before: a reload in
    between would read the old rows and count as fresh. Other replicas reload on their own timer."""
    changed = getattr(registry, "changed", None)
    if changed is None:
        return
    event.listen(session.sync_session, "after_commit", lambda _session: changed(), once=True)
