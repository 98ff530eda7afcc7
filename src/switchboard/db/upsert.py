"""The dialect's own INSERT, which (unlike the generic one) supports ON CONFLICT on both databases."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite


def insert_for(dialect_name: str) -> Any:
    """`postgresql.insert` or `sqlite.insert`, for `.on_conflict_do_nothing()` / `_do_update()`."""
    return postgresql.insert if dialect_name == "postgresql" else sqlite.insert
