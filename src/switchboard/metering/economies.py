"""Economies: the manifest, stable ids, the config sync at start, lookup by id or slug, changes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit.chain import record as audit_record
from switchboard.audit.events import FROM_CONFIG, Change, diff
from switchboard.config_file import ConfigError, EconomyEntry, GatewayConfig, PriceOverride
from switchboard.db.upsert import insert_for
from switchboard.errors import Conflict, NotFound
from switchboard.kit.amounts import MAX_AMOUNT, parse_amount
from switchboard.kit.clock import utcnow
from switchboard.metering.models import EconomyRow, ParticipantRow, UsageDailyRollupRow, UsageRecordRow
from switchboard.upstream import providers

DEFAULT_SLUG = "default"
# Nano-units: no sign, no leading zeros, at most 31 digits.
AMOUNT_PATTERN = r"^(0|[1-9][0-9]{0,30})$"
_AMOUNT = re.compile(AMOUNT_PATTERN)
MANAGED_BY_CONFIG = "config"
MANAGED_BY_API = "api"


class BudgetLimits(Protocol):
    """An economy's `budget` is a cost/month limit on it (SPEC §13), which the limits domain keeps
    (limits/budgets.py): every change of an economy that touches its budget goes through this."""

    async def sync(self, session: AsyncSession, economy_id: uuid.UUID, budget: str | None) -> None:
        """Make the economy's budget limit say `budget`, or remove it when None."""
        ...

    def others_apply(self, economy_id: uuid.UUID) -> ColumnElement[bool]:
        """True while a limit other than its budget applies to (or is narrowed to) the economy."""
        ...


class EconomySetupError(Exception):
    """The config's economies cannot be applied to this database; the gateway must not start."""


def economy_id_for(slug: str) -> uuid.UUID:
    """The id every replica derives for a config-declared economy (and for `default`)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:economy:{slug}")


def as_uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Economy:
    id: uuid.UUID
    slug: str
    name: str
    currency: str
    markup_bps: int
    price_overrides: Mapping[str, PriceOverride]
    budget: str | None
    managed_by: str
    created_at: datetime
    updated_at: datetime

    @property
    def is_default(self) -> bool:
        return self.slug == DEFAULT_SLUG


def overrides_from_json(raw: Mapping[str, Any] | None) -> dict[str, PriceOverride]:
    return {key: PriceOverride.model_validate(value) for key, value in (raw or {}).items()}


def overrides_to_json(overrides: Mapping[str, PriceOverride]) -> dict[str, Any]:
    return {key: value.model_dump() for key, value in overrides.items()}


def to_economy(row: EconomyRow) -> Economy:
    return Economy(
        id=row.id,
        slug=row.slug,
        name=row.name,
        currency=row.currency,
        markup_bps=row.markup_bps,
        price_overrides=overrides_from_json(row.price_overrides),
        budget=row.budget,
        managed_by=row.managed_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _entry_values(entry: EconomyEntry) -> dict[str, Any]:
    return {
        "slug": entry.slug,
        "name": entry.name,
        "currency": entry.currency,
        "markup_bps": entry.markup_bps,
        "price_overrides": overrides_to_json(entry.price_overrides),
        "budget": entry.budget,
        "managed_by": MANAGED_BY_CONFIG,
    }


def check_config_economies(config: GatewayConfig) -> None:
    """What the config's typed shape cannot say: unique slugs, amount strings, override keys."""
    seen: set[str] = set()
    for index, entry in enumerate(config.economies):
        where = f"economies.{index}"
        if entry.slug in seen:
            raise ConfigError(f"{where}.slug: economy {entry.slug!r} is declared twice")
        seen.add(entry.slug)
        if as_uuid(entry.slug) is not None:
            raise ConfigError(f"{where}.slug: a slug must not look like a UUID")
        budget = entry.budget
        if budget is not None and not (_AMOUNT.match(budget) and parse_amount(budget) is not None):
            raise ConfigError(
                f'{where}.budget: an integer string of nano-units up to {MAX_AMOUNT}, such as "5000000000"'
            )
        for key in entry.price_overrides:
            provider, sep, model = key.partition("/")
            if not sep or not providers.is_known(provider) or not model:
                raise ConfigError(f"{where}.price_overrides: {key!r} is not <provider>/<model>")


def config_entries(config: GatewayConfig) -> list[EconomyEntry]:
    entries = list(config.economies)
    if all(entry.slug != DEFAULT_SLUG for entry in entries):
        entries.insert(0, EconomyEntry(slug=DEFAULT_SLUG, name="Default"))
    return entries


async def sync_config_economies(
    session: AsyncSession, config: GatewayConfig, budgets: BudgetLimits
) -> Economy:
    """Make the database hold the config's economies (and `default`); return the default economy.

    Safe when several replicas start at once: rows are inserted with ON CONFLICT DO NOTHING and
    then updated to the same values, so the last writer writes what the first one did.
    """
    entries = config_entries(config)
    now = utcnow()
    insert = insert_for(session.get_bind().dialect.name)
    for entry in entries:
        values = {
            "id": economy_id_for(entry.slug),
            **_entry_values(entry),
            "created_at": now,
            "updated_at": now,
        }
        inserted = await session.execute(insert(EconomyRow).values(**values).on_conflict_do_nothing())
        if inserted.rowcount:  # type: ignore[attr-defined]
            await audit_record(
                session, _config_change("economy.create", values["id"], {}, values), FROM_CONFIG
            )
    rows = {
        row.slug: row
        for row in (
            await session.scalars(select(EconomyRow).where(EconomyRow.slug.in_([e.slug for e in entries])))
        ).all()
    }
    for entry in entries:
        row = rows.get(entry.slug)
        if row is None or row.id != economy_id_for(entry.slug):
            raise EconomySetupError(
                f"the config declares economy {entry.slug!r}, but an economy created over the API "
                "already uses that slug; rename one of them"
            )
        wanted = _entry_values(entry)
        if any(getattr(row, name) != value for name, value in wanted.items()):
            before = {name: getattr(row, name) for name in wanted}
            await session.execute(
                update(EconomyRow).where(EconomyRow.id == row.id).values(**wanted, updated_at=now)
            )
            await audit_record(session, _config_change("economy.update", row.id, before, wanted), FROM_CONFIG)
        await budgets.sync(session, row.id, entry.budget)
    default = await find_economy(session, config.default_economy)
    if default is None:
        raise EconomySetupError(f"default_economy names {config.default_economy!r}, which does not exist")
    return default


def _config_change(
    action: str, economy_id: uuid.UUID, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Change:
    shown = {k: v for k, v in after.items() if k not in ("id", "created_at", "updated_at")}
    return Change(action, "economy", str(economy_id), diff(before, shown), economy_id=str(economy_id))


async def find_economy(session: AsyncSession, ref: str) -> Economy | None:
    """By id when `ref` is a UUID, else by slug (slugs never parse as UUIDs)."""
    ref = ref.strip()
    economy_id = as_uuid(ref)
    column = EconomyRow.id if economy_id is not None else EconomyRow.slug
    row = await session.scalar(select(EconomyRow).where(column == (economy_id or ref)))
    return to_economy(row) if row is not None else None


async def get_economy(session: AsyncSession, ref: str) -> Economy:
    economy = await find_economy(session, ref)
    if economy is None:
        raise NotFound("economy not found")
    return economy


async def economies_by_id(session: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Economy]:
    if not ids:
        return {}
    rows = await session.scalars(select(EconomyRow).where(EconomyRow.id.in_(set(ids))))
    return {row.id: to_economy(row) for row in rows}


async def list_economies(
    session: AsyncSession, only: set[uuid.UUID] | None, after_slug: str | None, limit: int
) -> list[Economy]:
    """Economies ordered by slug; `only` limits to those ids (None: all)."""
    query = select(EconomyRow).order_by(EconomyRow.slug).limit(limit)
    if only is not None:
        query = query.where(EconomyRow.id.in_(only))
    if after_slug is not None:
        query = query.where(EconomyRow.slug > after_slug)
    return [to_economy(row) for row in await session.scalars(query)]


async def create_economy(session: AsyncSession, values: Mapping[str, Any], budgets: BudgetLimits) -> Economy:
    now = utcnow()
    row = EconomyRow(
        id=uuid.uuid4(),
        slug=values["slug"],
        name=values["name"],
        currency=values.get("currency") or "USD",
        markup_bps=values.get("markup_bps") or 0,
        price_overrides=overrides_to_json(values.get("price_overrides") or {}),
        budget=values.get("budget"),
        managed_by=MANAGED_BY_API,
        created_at=now,
        updated_at=now,
    )
    if await session.scalar(select(EconomyRow.id).where(EconomyRow.slug == row.slug)) is not None:
        raise Conflict(f"economy slug {row.slug!r} is taken")
    session.add(row)
    try:
        await session.flush()
    except IntegrityError:
        # Lost a race with a concurrent create of the same slug.
        raise Conflict(f"economy slug {row.slug!r} is taken") from None
    if row.budget is not None:
        await budgets.sync(session, row.id, row.budget)
    return to_economy(row)


async def update_economy(
    session: AsyncSession, economy: Economy, changes: Mapping[str, Any], budgets: BudgetLimits
) -> Economy:
    if economy.managed_by == MANAGED_BY_CONFIG:
        raise Conflict(f"economy {economy.slug!r} is declared in the config file; change it there")
    values = dict(changes)
    if "price_overrides" in values:
        values["price_overrides"] = overrides_to_json(values["price_overrides"] or {})
    if not values:
        return economy
    row = await session.get(EconomyRow, economy.id)
    if row is None:
        raise NotFound("economy not found")
    for name, value in values.items():
        setattr(row, name, value)  # through the ORM, so the audit trail sees each field's change
    row.updated_at = utcnow()
    await session.flush()
    if "budget" in values:
        await budgets.sync(session, economy.id, values["budget"])
    return await get_economy(session, str(economy.id))


async def delete_economy(session: AsyncSession, economy: Economy, budgets: BudgetLimits) -> None:
    """Delete an economy nothing depends on: one made by mistake, never metered to.

    Usage is billing history, so an economy with records (or rollups, once records are purged) stays;
    so does one a room, an agent or a limit other than its own budget still names: each is a 409
    saying what to change first. Its participants and its budget go with it.
    """
    # Rooms and agents are other domains' tables; they are read here only to refuse.
    from switchboard.agents.models import AgentVersion
    from switchboard.groups.models import Room

    if economy.managed_by == MANAGED_BY_CONFIG:
        raise Conflict(f"economy {economy.slug!r} is declared in the config file; remove it there")
    if economy.is_default:
        raise Conflict("the default economy cannot be deleted")
    key = economy.id
    blockers = (
        (exists().where(UsageRecordRow.economy_id == key), "it has usage records, which billing keeps"),
        (exists().where(UsageDailyRollupRow.economy_id == key), "it has usage records, which billing keeps"),
        (exists().where(Room.default_economy_id == key), "a room uses it as its default economy"),
        (exists().where(AgentVersion.economy_id == key), "an agent meters to it"),
        (budgets.others_apply(key), "limits apply to it; delete them first"),
    )
    for clause, why in blockers:
        if await session.scalar(select(clause)):
            raise Conflict(f"economy {economy.slug!r} cannot be deleted: {why}")
    await budgets.sync(session, key, None)
    # Row by row through the ORM, so the audit trail records each participant and the economy going.
    for participant in await session.scalars(select(ParticipantRow).where(ParticipantRow.economy_id == key)):
        await session.delete(participant)
    row = await session.get(EconomyRow, key)
    if row is not None:
        await session.delete(row)
    await session.flush()
