"""Opaque cursors and limits for `{data, next_cursor}` lists (SPEC §4)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel

from switchboard.errors import ValidationFailed

T = TypeVar("T")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


class Page(BaseModel, Generic[T]):
    data: list[T]
    next_cursor: str | None


def encode_cursor(key: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(key))).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> list[Any] | None:
    """The sort key after which the next page starts; 400 for anything we did not issue."""
    if cursor is None or cursor == "":
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, orjson.JSONDecodeError):
        raise ValidationFailed("cursor is not valid", param="cursor") from None
    if not isinstance(value, list):
        raise ValidationFailed("cursor is not valid", param="cursor")
    return value


def time_id_cursor(cursor: str | None) -> tuple[datetime, uuid.UUID] | None:
    """The (created_at, id) pair a keyset cursor carries, or None for the first page; 400 for
    anything else (a timestamp without its zone included: it would compare wrongly)."""
    raw = decode_cursor(cursor)
    if raw is None:
        return None
    try:
        created_at, row_id = raw
        after = datetime.fromisoformat(str(created_at)), uuid.UUID(str(row_id))
    except (TypeError, ValueError):
        raise ValidationFailed("cursor is not valid", param="cursor") from None
    if after[0].tzinfo is None:
        raise ValidationFailed("cursor is not valid", param="cursor")
    return after


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be between 1 and {MAX_LIMIT}", param="limit")
    return limit
