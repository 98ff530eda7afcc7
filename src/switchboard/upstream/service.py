"""What the upstream domain tells callers: the provider kinds it reaches, and their secrets' shapes."""

from __future__ import annotations

import functools
from typing import Literal

from switchboard.errors import ValidationFailed
from switchboard.kit.pagination import Page, check_limit, decode_cursor, encode_cursor
from switchboard.upstream import private_defaults, providers
from switchboard.upstream.schemas import ProviderOut


@functools.cache
def _offered() -> tuple[str, ...]:
    """Every kind a credential may name, in name order (the list's stable order)."""
    every = {*providers.NATIVE, *providers.LONG_TAIL}
    return tuple(sorted(every - providers.BORROWS_HOST_IDENTITY))


def _describe(kind: str, allow_private: bool) -> ProviderOut:
    shape = providers.SECRET_SHAPES.get(kind)
    base_url: Literal["optional", "required"] = "optional"
    if kind in providers.NEEDS_BASE_URL or (kind in private_defaults.PRIVATE_DEFAULT and not allow_private):
        base_url = "required"
    return ProviderOut(
        kind=kind,
        native=providers.is_native(kind),
        credential_format="json" if shape else "string",
        json_fields=list(shape.required) if shape else [],
        optional_json_fields=list(shape.optional) if shape else [],
        base_url=base_url,
    )


def list_providers(cursor: str | None, limit: int, allow_private: bool) -> Page[ProviderOut]:
    check_limit(limit)
    after = decode_cursor(cursor)
    if after is not None and (len(after) != 1 or not isinstance(after[0], str)):
        raise ValidationFailed("cursor is not valid", param="cursor")
    kinds = [kind for kind in _offered() if after is None or kind > after[0]]
    page = kinds[:limit]
    next_cursor = encode_cursor([page[-1]]) if len(kinds) > limit else None
    return Page[ProviderOut](data=[_describe(kind, allow_private) for kind in page], next_cursor=next_cursor)
