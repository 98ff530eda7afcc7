"""`limits:` in the config file: checked, resolved to ids, and written at start under stable ids."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit.chain import record as audit_record
from switchboard.audit.events import FROM_CONFIG, Change, diff
from switchboard.auth.users import user_id_by_email
from switchboard.config_file import ConfigError, GatewayConfig, LimitEntry
from switchboard.db.upsert import insert_for
from switchboard.errors import ValidationFailed
from switchboard.kit.amounts import MAX_AMOUNT, parse_amount
from switchboard.kit.clock import utcnow
from switchboard.limits.authority import OPERATOR
from switchboard.limits.models import LimitRow
from switchboard.limits.store import MANAGED_BY_CONFIG, LimitKey
from switchboard.limits.subjects import subject_form
from switchboard.metering.service import find_economy

_LIMITS = cast(Table, LimitRow.__table__)


@dataclass(frozen=True)
class ConfigLimit:
    id: uuid.UUID
    key: LimitKey
    amount: int
    allow_unpriced: bool


def config_limit_id(key: LimitKey) -> uuid.UUID:
    """The id every replica derives for a config limit: the same entry is the same row everywhere."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:limit:{key.canonical()}")


def check_config_limits(config: GatewayConfig) -> None:
    """What the typed shape cannot say, before the database is asked anything."""
    for index, entry in enumerate(config.limits):
        where = f"limits.{index}"
        if parse_amount(entry.amount) is None:
            raise ConfigError(f'{where}.amount: an integer string from "0" to "{MAX_AMOUNT}", such as "1000"')
        if entry.subject_type == "economy" and entry.economy_id is not None:
            raise ConfigError(
                f"{where}.economy_id: narrows a user, room, agent or api_key limit, not an economy's"
            )
        if entry.subject_type == "user" and "@" in entry.subject_id:
            continue  # an email, looked up at sync
        try:
            subject_form(entry.subject_type, entry.subject_id)
        except ValidationFailed as exc:
            hint = "a user is named by id (a UUID) or email" if entry.subject_type == "user" else None
            raise ConfigError(f"{where}.subject_id: {hint}" if hint else f"{where}.{exc.message}") from None


async def _economy_id(session: AsyncSession, ref: str, where: str) -> uuid.UUID:
    economy = await find_economy(session, ref)
    if economy is None:
        raise ConfigError(f"{where}: no economy {ref!r} (economies are named by slug or id)")
    return economy.id


async def _subject_id(session: AsyncSession, entry: LimitEntry, where: str) -> str:
    if entry.subject_type == "economy":
        return str(await _economy_id(session, entry.subject_id, where))
    if entry.subject_type == "user" and "@" in entry.subject_id:
        user_id = await user_id_by_email(session, entry.subject_id)
        if user_id is None:
            raise ConfigError(f"{where}: no user with email {entry.subject_id!r} (`switchboard user create`)")
        return str(user_id)
    # Rooms, agents, keys and token users are taken by id: they may not exist yet on a first start.
    return subject_form(entry.subject_type, entry.subject_id)


async def resolve_config_limits(session: AsyncSession, config: GatewayConfig) -> list[ConfigLimit]:
    check_config_limits(config)
    found: dict[uuid.UUID, int] = {}
    resolved: list[ConfigLimit] = []
    for index, entry in enumerate(config.limits):
        where = f"limits.{index}"
        subject_id = await _subject_id(session, entry, f"{where}.subject_id")
        economy_id = (
            await _economy_id(session, entry.economy_id, f"{where}.economy_id") if entry.economy_id else None
        )
        key = LimitKey(entry.subject_type, subject_id, economy_id, entry.metric, entry.window)
        limit_id = config_limit_id(key)
        if limit_id in found:
            raise ConfigError(f"{where}.subject_id: the same limit as limits.{found[limit_id]}; keep one")
        found[limit_id] = index
        resolved.append(ConfigLimit(limit_id, key, int(entry.amount), entry.allow_unpriced))
    return resolved


async def sync_config_limits(session: AsyncSession, config: GatewayConfig) -> int:
    """Make the database hold exactly the config's limits; returns how many there are.

    Safe when several replicas start at once: rows are inserted ON CONFLICT DO NOTHING under their
    derived ids, then updated to the same values; config limits gone from the file are deleted.
    """
    limits = await resolve_config_limits(session, config)
    now = utcnow()
    insert = insert_for(session.get_bind().dialect.name)
    for limit in limits:
        key = limit.key
        values = {
            "subject_type": key.subject_type,
            "subject_id": key.subject_id,
            "economy_id": key.economy_id,
            "metric": key.metric,
            "time_window": key.window,
        }
        changing = {"amount": str(limit.amount), "allow_unpriced": limit.allow_unpriced}
        inserted = await session.execute(
            insert(_LIMITS)
            .values(
                id=limit.id,
                **values,
                **changing,
                managed_by=MANAGED_BY_CONFIG,
                created_by=None,
                authority=OPERATOR,  # the config file's limits are the operator's word
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing()
        )
        if inserted.rowcount:  # type: ignore[attr-defined]
            await _audit(session, "limit.create", limit.id, key.economy_id, {}, {**values, **changing})
            continue
        before = (
            await session.execute(
                select(_LIMITS.c.amount, _LIMITS.c.allow_unpriced).where(_LIMITS.c.id == limit.id)
            )
        ).one()
        if (before.amount, before.allow_unpriced) == (changing["amount"], changing["allow_unpriced"]):
            continue
        await _audit(session, "limit.update", limit.id, key.economy_id, before._asdict(), changing)
        await session.execute(
            update(_LIMITS)
            .where(
                _LIMITS.c.id == limit.id,
                (_LIMITS.c.amount != changing["amount"]) | (_LIMITS.c.allow_unpriced != limit.allow_unpriced),
            )
            .values(**changing, updated_at=now)
        )
    kept = [limit.id for limit in limits]
    gone = select(_LIMITS.c.id).where(_LIMITS.c.managed_by == MANAGED_BY_CONFIG, _LIMITS.c.id.not_in(kept))
    gone_ids = list(await session.scalars(gone))
    for gone_id in gone_ids:
        await _audit(
            session, "limit.delete", gone_id, None, {"managed_by": MANAGED_BY_CONFIG}, {"managed_by": None}
        )
    if gone_ids:
        await session.execute(
            delete(_LIMITS).where(_LIMITS.c.managed_by == MANAGED_BY_CONFIG, _LIMITS.c.id.not_in(kept))
        )
    return len(limits)


async def _audit(
    session: AsyncSession,
    action: str,
    limit_id: uuid.UUID,
    economy_id: uuid.UUID | None,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> None:
    change = Change(
        action,
        "limit",
        str(limit_id),
        diff(before, after),
        economy_id=str(economy_id) if economy_id else None,
    )
    await audit_record(session, change, FROM_CONFIG)
