"""What the model-call pipeline calls, built once at start (llm/lifecycle.py) and passed down.

Each field is the object a domain's lifecycle built; the pipeline takes them from here, typed, and
never looks anything up on `app.state` while a call runs. Another package that hooks into every
call (audit, webhooks, a cache) adds its service here, built in its own lifecycle before `llm`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.datastructures import State

from switchboard.auth.authenticator import Authenticator
from switchboard.cache.store import CacheStore
from switchboard.catalog.catalog import Catalog
from switchboard.credentials.store import CredentialStore
from switchboard.db.outage import DatabaseOutage
from switchboard.db.write_transaction import WriteTransactions
from switchboard.idempotency.service import IdempotencyStore
from switchboard.limits.allowances import Allowances
from switchboard.limits.leases import HoldLeases
from switchboard.limits.registry import LimitRegistry
from switchboard.metering.writer import UsageWriter
from switchboard.observability.metrics import Metrics
from switchboard.routing.health import RouteHealth
from switchboard.settings import Settings
from switchboard.settlement.call import Settlement
from switchboard.upstream.client import UpstreamClient
from switchboard.webhooks.hub import WebhookHub

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pipeline:
    settings: Settings
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    db_outage: DatabaseOutage  # a call that could not be metered is not made (503)
    authenticator: Authenticator
    idempotency: IdempotencyStore
    credentials: CredentialStore
    upstream: UpstreamClient
    catalog: Catalog
    call_sink: UsageWriter[Settlement]  # records, and settles a call's holds and claim with its record
    write_transactions: WriteTransactions
    limits: LimitRegistry
    routing: RouteHealth  # cooldowns and calls in flight per route (SPEC §14)
    hold_leases: HoldLeases
    # Slots of the limits' amounts this process admits calls against in memory (None: not enabled).
    allowances: Allowances | None
    metrics: Metrics | None
    webhooks: WebhookHub | None  # refusals, rejected keys and settled costs, for their webhooks
    cache: CacheStore | None  # the response cache (SPEC §23), asked only when a call opts in


def _typed(state: State, name: str, kind: type[T]) -> T:
    """`state.<name>`, checked once at start: a lifecycle that left the wrong thing fails here."""
    value = getattr(state, name)
    if not isinstance(value, kind):
        raise TypeError(f"app.state.{name} is a {type(value).__name__}, not a {kind.__name__}")
    return value


def pipeline_of(
    state: State,
    limits: LimitRegistry,
    routing: RouteHealth,
    leases: HoldLeases,
    allowances: Allowances | None,
) -> Pipeline:
    """The pipeline over what the domains' lifecycles (app.LIFECYCLES, all before `llm`) built."""
    metrics = getattr(state, "metrics", None)
    webhooks = getattr(state, "webhooks", None)
    if isinstance(webhooks, WebhookHub):
        webhooks.limits = limits  # a refusal's event describes the limit the registry holds
    return Pipeline(
        settings=_typed(state, "settings", Settings),
        engine=_typed(state, "engine", AsyncEngine),
        sessionmaker=_typed(state, "sessionmaker", async_sessionmaker),
        db_outage=_typed(state, "db_outage", DatabaseOutage),
        authenticator=_typed(state, "authenticator", Authenticator),
        idempotency=_typed(state, "idempotency", IdempotencyStore),
        credentials=_typed(state, "credentials", CredentialStore),
        upstream=_typed(state, "upstream", UpstreamClient),
        catalog=_typed(state, "catalog", Catalog),
        call_sink=_typed(state, "call_sink", UsageWriter),
        write_transactions=_typed(state, "write_transactions", WriteTransactions),
        limits=limits,
        routing=routing,
        hold_leases=leases,
        allowances=allowances,
        metrics=metrics if isinstance(metrics, Metrics) else None,
        webhooks=webhooks if isinstance(webhooks, WebhookHub) else None,
        cache=cache if isinstance(cache := getattr(state, "cache", None), CacheStore) else None,
    )
