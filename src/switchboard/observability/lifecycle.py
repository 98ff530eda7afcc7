"""Start-up: the app's metrics (fed by the usage writer too) and, when configured, tracing."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics

from switchboard.observability import events, tracing
from switchboard.observability.metrics import Metrics
from switchboard.observability.pool_gauges import PoolGauges


async def startup(app: Any) -> None:
    # `_created` series double a scrape's size and say nothing a dashboard uses.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    metrics = Metrics(CollectorRegistry(auto_describe=True))
    app.state.metrics = metrics
    sink = getattr(app.state, "call_sink", None)
    if sink is not None:
        events.watch_writer(sink, metrics)
    app.state.pool_gauges = PoolGauges(app.state.engine, metrics)
    app.state.pool_gauges.start()
    settings = app.state.settings
    app.state.tracing = bool(settings.otel_traces_endpoint) and not tracing.ON
    if app.state.tracing:
        tracing.configure(settings.otel_traces_endpoint, settings.otel_service_name)


async def shutdown(app: Any) -> None:
    gauges = getattr(app.state, "pool_gauges", None)
    if gauges is not None:
        await gauges.stop()
    if getattr(app.state, "tracing", False):
        tracing.shutdown()  # exports the spans still pending
