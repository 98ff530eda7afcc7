"""LLM credentials: who may add, list, change and delete them, and the store `/v1` spends from."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from switchboard.auth.principal import Principal
from switchboard.credentials import provider_rules
from switchboard.credentials.binding import associated_data
from switchboard.credentials.egress import check_egress, check_endpoint_known
from switchboard.credentials.models import LlmCredential
from switchboard.credentials.schemas import CredentialCreate, CredentialOut, CredentialUpdate
from switchboard.credentials.store import CredentialRef, CredentialStore
from switchboard.errors import Forbidden, NotFound, ValidationFailed
from switchboard.groups import service as groups
from switchboard.kit.clock import utcnow
from switchboard.kit.pagination import Page, check_limit, encode_cursor, time_id_cursor

__all__ = [
    "CredentialRef",
    "CredentialStore",
    "create_credential",
    "delete_credential",
    "get_credential",
    "list_credentials",
    "update_credential",
]


def _not_found() -> NotFound:
    # Also the answer for someone else's credential: its existence is not theirs to learn (SPEC §2).
    return NotFound("credential not found")


def _seal(store: CredentialStore, row: LlmCredential, sealable: tuple[str, str]) -> None:
    plain, hint = sealable  # from provider_rules.sealable: checked against the row's provider
    row.sealed_secret = store.keyring.seal(
        plain.encode("utf-8"), associated_data(row.id, row.scope, row.owner_id, row.provider)
    )
    row.secret_hint = hint


def _refuse_personal_change(principal: Principal) -> None:
    if principal.is_delegated:
        raise Forbidden("a delegation token acts for its room; it cannot change personal credentials")


async def _require_change(session: AsyncSession, principal: Principal, row: LlmCredential) -> None:
    if row.scope == "user":
        _refuse_personal_change(principal)
        return
    assert row.room_id is not None
    access = await groups.room_access(session, principal, row.room_id)
    access.require(groups.MANAGE, "change its credentials")


async def _visible(session: AsyncSession, principal: Principal, credential_id: uuid.UUID) -> LlmCredential:
    row = await session.get(LlmCredential, credential_id)
    if row is None:
        raise _not_found()
    if row.scope == "user":
        if row.user_id != principal.user_id:
            raise _not_found()
        return row
    assert row.room_id is not None
    try:
        await groups.room_access(session, principal, row.room_id)
    except NotFound:
        raise _not_found() from None
    return row


async def create_credential(
    session: AsyncSession, store: CredentialStore, principal: Principal, body: CredentialCreate
) -> CredentialOut:
    if body.scope == "room":
        assert body.room_id is not None
        access = await groups.room_access(session, principal, body.room_id)
        access.require(groups.MANAGE, "add its credentials")
    else:
        _refuse_personal_change(principal)
    provider_rules.check_offered(body.provider)
    provider_rules.check_usable(body.provider, body.base_url, store.allow_private)
    check_endpoint_known(body.provider, body.base_url, store.allow_private)
    sealable = provider_rules.sealable(body.provider, body.secret)
    if body.base_url is not None:
        await check_egress(body.base_url, store.allow_private)
    now = utcnow()
    row = LlmCredential(
        id=uuid.uuid4(),
        provider=body.provider,
        scope=body.scope,
        user_id=principal.user_id if body.scope == "user" else None,
        room_id=body.room_id,
        label=body.label or None,
        base_url=body.base_url,
        created_by=principal.user_id,
        created_at=now,
        updated_at=now,
        last_used_at=None,
    )
    _seal(store, row, sealable)
    session.add(row)
    await session.flush()
    # A caller who adds a key expects their next call on this replica to find it.
    store.invalidate()
    return CredentialOut.model_validate(row)


async def get_credential(
    session: AsyncSession, principal: Principal, credential_id: uuid.UUID
) -> CredentialOut:
    return CredentialOut.model_validate(await _visible(session, principal, credential_id))


async def list_credentials(
    session: AsyncSession,
    principal: Principal,
    scope: str | None,
    room_id: uuid.UUID | None,
    cursor: str | None,
    limit: int,
) -> Page[CredentialOut]:
    """The caller's own and their rooms' credentials, oldest first, narrowed by scope or room."""
    check_limit(limit)
    if scope == "user" and room_id is not None:
        raise ValidationFailed("room_id only goes with scope=room", param="room_id")
    reach: list[ColumnElement[bool]] = []
    if room_id is not None:
        await groups.room_access(session, principal, room_id)
        reach.append(and_(LlmCredential.scope == "room", LlmCredential.room_id == room_id))
    else:
        if scope in (None, "user"):
            reach.append(and_(LlmCredential.scope == "user", LlmCredential.user_id == principal.user_id))
        if scope in (None, "room"):
            rooms = [
                r
                for r in await groups.room_ids_of(session, principal.user_id)
                if groups.sees_room(principal, r)
            ]
            if rooms:
                reach.append(and_(LlmCredential.scope == "room", LlmCredential.room_id.in_(rooms)))
    if not reach:
        return Page[CredentialOut](data=[], next_cursor=None)
    query = (
        select(LlmCredential)
        .where(or_(*reach))
        .order_by(LlmCredential.created_at, LlmCredential.id)
        .limit(limit + 1)
    )
    after = time_id_cursor(cursor)
    if after is not None:
        created_at, last_id = after
        query = query.where(
            or_(
                LlmCredential.created_at > created_at,
                and_(LlmCredential.created_at == created_at, LlmCredential.id > last_id),
            )
        )
    rows = list(await session.scalars(query))
    items = [CredentialOut.model_validate(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        next_cursor = encode_cursor([items[-1].created_at.isoformat(), str(items[-1].id)])
    return Page[CredentialOut](data=items, next_cursor=next_cursor)


async def update_credential(
    session: AsyncSession,
    store: CredentialStore,
    principal: Principal,
    credential_id: uuid.UUID,
    body: CredentialUpdate,
) -> CredentialOut:
    row = await _visible(session, principal, credential_id)
    await _require_change(session, principal, row)
    provider_rules.check_offered(row.provider)  # a kept credential of a kind no longer offered
    given = body.model_fields_set
    if "secret" in given and body.secret is None:
        raise ValidationFailed("secret: a credential cannot be left without a secret", param="secret")
    sealable = provider_rules.sealable(row.provider, body.secret) if body.secret is not None else None
    if "base_url" in given:
        provider_rules.check_usable(row.provider, body.base_url, store.allow_private)
        check_endpoint_known(row.provider, body.base_url, store.allow_private)
    if "base_url" in given and body.base_url is not None:
        await check_egress(body.base_url, store.allow_private)
    if "label" in given:
        row.label = body.label or None
    if "base_url" in given:
        row.base_url = body.base_url
    if sealable is not None:
        _seal(store, row, sealable)
    if given:
        row.updated_at = utcnow()
        await session.flush()
        store.invalidate()
    return CredentialOut.model_validate(row)


async def delete_credential(
    session: AsyncSession, store: CredentialStore, principal: Principal, credential_id: uuid.UUID
) -> None:
    row = await _visible(session, principal, credential_id)
    await _require_change(session, principal, row)
    await session.delete(row)
    await session.flush()
    store.invalidate()
