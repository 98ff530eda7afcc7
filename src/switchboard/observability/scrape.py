"""What a scrape of GET /metrics answers: this process's registry, or every worker's added up."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

from switchboard.observability.metrics import Metrics

# The text format generate_latest writes (prometheus_client now calls 1.0.0 its "latest").
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exposition(metrics: Metrics) -> bytes:
    """Prometheus text. In multiprocess mode (workers.py) the values are in the workers' files, which
    any worker reads: a scrape that lands on one worker reports the whole server."""
    if getattr(values.ValueClass, "_multiprocess", False):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(metrics.registry)
