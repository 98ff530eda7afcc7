"""A usage record's values as the insert takes them: the outcome's fields, costed from the price book."""

from __future__ import annotations

import logging
import operator
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from switchboard.metering.outcome import CallOutcome
from switchboard.metering.price_book import MAX_COST, PriceBook
from switchboard.metering.pricing import Prices, compute_cost

if TYPE_CHECKING:
    from switchboard.metering.writer import Pending, S

log = logging.getLogger("switchboard.metering.writer")

_OUTCOME_FIELDS = tuple(f.name for f in fields(CallOutcome))
_outcome_values = operator.attrgetter(*_OUTCOME_FIELDS)
# The order of the values `RecordRows.row` hands to the insert.
COLUMNS = (
    "id",
    *_OUTCOME_FIELDS,
    "cost",
    "priced",
    "input_per_mtok",
    "output_per_mtok",
    "markup_bps",
    "price_source",
    "prices",
)
COST_INDEX = COLUMNS.index("cost")


@dataclass(frozen=True)
class _PriceProbe:
    """Just what price lookups read of an outcome."""

    economy_id: uuid.UUID
    provider: str
    model: str
    service_tier: str | None = None  # a reservation is priced at the default tier


class RecordRows:
    """Costs a batch's outcomes and lays them out in `COLUMNS` order."""

    def __init__(self, book: PriceBook) -> None:
        self.book = book

    async def rows(self, batch: Sequence[Pending[S]]) -> list[tuple[object, ...]]:
        economies = await self.book.economies({p.outcome.economy_id for p in batch})
        rows = []
        for pending in batch:
            outcome = pending.outcome
            economy = economies.get(outcome.economy_id)
            prices = self.book.kept(outcome)
            if prices is None:
                prices = await self.book.prices(outcome, economy)
            rows.append(self.row(pending, prices, economy.markup_bps if economy is not None else 0))
        return rows

    def kept_price_of(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int] | None:
        """`price_of` without an await when the book has both kept; None: await `price_of`."""
        return self.book.kept_with_markup(economy_id, provider, model)

    async def price_of(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int]:
        """The prices and markup a record of this call will be costed with (for a limit's estimate)."""
        economy = (await self.book.economies({economy_id})).get(economy_id)
        # Every call under a cost limit asks, before the provider: the kept prices without a probe.
        prices = self.book.kept_at(economy_id, provider, model)
        if prices is None:
            prices = await self.book.prices(_PriceProbe(economy_id, provider, model), economy)
        return prices, economy.markup_bps if economy is not None else 0

    @staticmethod
    def row(pending: Pending[S], prices: Prices, markup: int) -> tuple[object, ...]:
        """The record's values in `COLUMNS` order; sets the pending record's cost."""
        outcome = pending.outcome
        cost = compute_cost(prices, outcome, markup)
        if outcome.cache_hit:  # no provider was paid (SPEC §23); the prices stay on the record
            cost = replace(cost, nanos=0)
        elif cost.nanos > MAX_COST:
            # Absurd prices: storing the record (flagged unpriced) beats losing it to a column overflow.
            log.warning("cost of record %s exceeds the cost column; stored unpriced", pending.record_id)
            cost = replace(cost, nanos=0, priced=False)
        pending.cost = cost.nanos
        return (
            pending.record_id,
            *_outcome_values(outcome),
            cost.nanos,
            cost.priced,
            cost.input_per_mtok,
            cost.output_per_mtok,
            cost.markup_bps,
            cost.source,
            cost.prices,
        )
