"""The usage writer's prices: economies (markup, overrides) and per-model prices, read once and kept.

Economy manifests are re-read at most every ECONOMY_TTL_SECONDS (or when an admin's change moves the
resolution cache's generation); prices per (economy, provider, model) are resolved once against them:
the economy's override, else the catalog, else litellm's map. Every economy read is kept (and
re-read) for the life of the process, and a failed re-read keeps what was read before, so that a
record spooled while the database is away can still be costed (`known_cost`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from typing import Protocol

from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.config_file import ModelEntry
from switchboard.metering.economies import Economy, economies_by_id
from switchboard.metering.pricing import (
    PRICED_SERVICE_TIERS,
    Counts,
    Prices,
    compute_cost,
    find_prices,
    litellm_lookup,
    needs_litellm,
)
from switchboard.metering.resolution import cache_generation

# Economy manifests (markup, price overrides) are re-read at most this often: a batch of one call
# (concurrency 1) would otherwise pay a query for them. Matches the resolution cache's lifetime.
ECONOMY_TTL_SECONDS = 2.0
MAX_LOOKUPS = 10_000
MAX_COST = 2**63 - 1  # BIGINT


class Priced(Protocol):
    """Just what a price lookup reads of a record (a CallOutcome, or a limit's probe)."""

    @property
    def economy_id(self) -> uuid.UUID: ...
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def service_tier(self) -> str | None: ...


class Tokens(Priced, Counts, Protocol):
    pass


def priced_tier(record: Priced) -> str | None:
    """The record's service tier where it has prices of its own (litellm's map), else None."""
    tier = record.service_tier
    return tier if tier in PRICED_SERVICE_TIERS else None


class PriceBook:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        engine: Engine,
        catalog: Mapping[str, ModelEntry],
    ) -> None:
        self._sessionmaker = sessionmaker
        self._engine = engine
        self._catalog = dict(catalog)
        self._litellm: dict[tuple[str, str, str | None], Prices] = {}
        self._economies: dict[uuid.UUID, Economy] = {}
        # Prices per (economy, provider, model, priced service tier): the first source that prices
        # the model of overrides, catalog and litellm, resolved once.
        self._prices: dict[tuple[uuid.UUID, str, str, str | None], Prices] = {}
        self._until = 0.0
        self._generation = -1
        self._reading = False  # a re-read after the TTL is under way

    async def economies(self, ids: set[uuid.UUID]) -> dict[uuid.UUID, Economy]:
        """These economies (and any other kept); a session and a query only for those not kept."""
        now = time.monotonic()
        generation = cache_generation(self._engine)
        stale = now >= self._until or generation != self._generation
        if stale and self._reading and generation == self._generation and ids <= self._economies.keys():
            # Only the time ran out and another call is reading them again: concurrent calls (each
            # call under a cost limit asks) use these, at most one read old, rather than all read.
            return self._economies
        # A re-read takes every economy kept too (admins make few): each stays known for known_cost.
        missing = ids | self._economies.keys() if stale else ids - self._economies.keys()
        found: dict[uuid.UUID, Economy] = {}
        if missing:
            self._reading = stale
            try:
                async with self._sessionmaker() as session:
                    found = await economies_by_id(session, list(missing))
            finally:
                self._reading = False
        if stale:  # dropped only once the fresh read succeeded (see the module's docstring)
            self._economies.clear()
            self._prices.clear()
            self._until = now + ECONOMY_TTL_SECONDS
            self._generation = generation
        self._economies.update(found)
        return self._economies

    def kept_with_markup(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int] | None:
        """A reservation's prices and its economy's markup when both are kept and the economies are
        not due a re-read (`economies` would answer from memory): no await, every call under a cost
        limit asks. None: ask `economies` and `prices`."""
        if time.monotonic() >= self._until or cache_generation(self._engine) != self._generation:
            return None
        economy = self._economies.get(economy_id)
        prices = self._prices.get((economy_id, provider, model, None))
        if economy is None or prices is None:
            return None
        return prices, economy.markup_bps

    def kept(self, record: Priced) -> Prices | None:
        """The prices already resolved for this record's economy and model (no await: per record)."""
        return self._prices.get((record.economy_id, record.provider, record.model, priced_tier(record)))

    def kept_at(self, economy_id: uuid.UUID, provider: str, model: str) -> Prices | None:
        """`kept` at the default service tier (a reservation's), from the key itself."""
        return self._prices.get((economy_id, provider, model, None))

    async def prices(self, record: Priced, economy: Economy | None) -> Prices:
        """From the economy's override, the catalog or litellm's map, kept with the economy."""
        tier = priced_tier(record)
        key = (record.economy_id, record.provider, record.model, tier)
        prices = self._prices.get(key)
        if prices is not None:
            return prices
        overrides = economy.price_overrides if economy is not None else {}
        prices = find_prices(record.provider, record.model, overrides, self._catalog)
        if needs_litellm(prices):
            litellm = await self._litellm_prices(record.provider, record.model, tier)
            prices = find_prices(record.provider, record.model, overrides, self._catalog, litellm)
        if len(self._prices) >= MAX_LOOKUPS:
            self._prices.clear()  # callers can name any model; keep the cache bounded
        self._prices[key] = prices
        return prices

    async def known_cost(self, record: Tokens) -> int | None:
        """The cost from what was read last, without the database; None for an economy never read
        (its markup and overrides are unknown)."""
        economy = self._economies.get(record.economy_id)
        if economy is None:
            return None
        prices = await self.prices(record, economy)  # the catalog and litellm's map need no database
        cost = compute_cost(prices, record, economy.markup_bps)
        return cost.nanos if cost.nanos <= MAX_COST else 0

    async def _litellm_prices(self, provider: str, model: str, tier: str | None) -> Prices:
        """litellm's cost map is consulted off the event loop (its first read is slow), once per model."""
        key = (provider, model, tier)
        found = self._litellm.get(key)
        if found is None:
            if len(self._litellm) >= MAX_LOOKUPS:
                self._litellm.clear()
            found = self._litellm[key] = await asyncio.to_thread(litellm_lookup, provider, model, tier)
        return found
