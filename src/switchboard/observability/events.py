"""The pipeline's events, the only places telemetry hangs off (STYLE, part two).

attempt started / attempt failed (llm/attempts.py), answer read (upstream/client.py, native.py: its
finish reasons, for tracing only), attempt moved on from (ledger.record_attempt),
limit refused (ledger.begin), stream opened / closed (llm/relay.py), call settled (ledger.settle,
every ending of every surface), usage batch written (metering/writer.py). Each does the least it
can: the metrics' children are resolved once per label set, tracing is one flag when it is off.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Container
from typing import Any

from switchboard.errors import error_code_of
from switchboard.observability import finish, tracing
from switchboard.observability.attempt import AttemptFacts, SettledCall
from switchboard.observability.metrics import Metrics
from switchboard.observability.request import CURRENT

# The usage writer knows no app state; lifecycle.py tells this module whose metrics it feeds.
_WRITERS: weakref.WeakKeyDictionary[Any, Metrics] = weakref.WeakKeyDictionary()


def error_type_of(outcome: SettledCall) -> str:
    """'' for a call that succeeded; else its error code (`cancelled` when the client left)."""
    if outcome.status == "ok":
        return ""
    if outcome.status == "cancelled":
        return "cancelled"
    return outcome.error_code or outcome.status


def attempt_started(call: AttemptFacts) -> None:
    if tracing.ON:
        request = CURRENT.get()
        if request is not None:
            tracing.start_attempt(request, call)


def attempt_failed(metrics: Metrics | None, call: AttemptFacts, error: BaseException) -> None:
    """A provider attempt ended in `error` (before or after its first byte); not the client leaving."""
    if isinstance(error, asyncio.CancelledError):
        return
    kind = error_code_of(error)
    if metrics is not None:
        metrics.upstream_error(call.model.provider, kind)
    if tracing.ON:
        request = CURRENT.get()
        if request is not None:
            tracing.attempt_failed(request, kind)


def provider_headers() -> bytes:
    """Header lines for the provider request of the attempt under way: its `traceparent`."""
    if not tracing.ON:
        return b""
    request = CURRENT.get()
    return tracing.provider_headers(request) if request is not None else b""


def choices_answered(body: bytes) -> None:
    """A non-streamed OpenAI-format answer (chat or text completion) came: its finish reasons."""
    if tracing.ON:
        request = CURRENT.get()
        if request is not None:
            tracing.finish_reasons(request, finish.of_choices(body))


def finish_reporter() -> Callable[[list[str]], None] | None:
    """Where a watched stream hands its finish reasons when tracing is on (upstream/choices_watch.py)."""
    if not tracing.ON:
        return None
    request = CURRENT.get()
    if request is None:
        return None
    return lambda reasons: tracing.finish_reasons(request, reasons)


def answer_finished(reasons: list[str]) -> None:
    """The finish reasons a native relay read where it parsed the answer anyway (upstream/native.py)."""
    if tracing.ON:
        request = CURRENT.get()
        if request is not None:
            tracing.finish_reasons(request, reasons)


def attempt_moved_on(metrics: Metrics | None) -> None:
    if metrics is not None:
        metrics.fallbacks.inc()


def limit_refused(metrics: Metrics | None) -> None:
    if metrics is not None:
        metrics.limit_rejections.inc()


def limit_admitted(metrics: Metrics | None, on_allowance: bool) -> None:
    if metrics is not None:
        (metrics.admitted_on_allowance if on_allowance else metrics.admitted_on_reservation).inc()


def allowance_granted(metrics: Metrics | None) -> None:
    if metrics is not None:
        metrics.allowance_grants.inc()


def stream_opened(metrics: Metrics | None) -> None:
    if metrics is not None:
        metrics.streams.inc()


def stream_closed(metrics: Metrics | None) -> None:
    if metrics is not None:
        metrics.streams.dec()


def _count_classes(metrics: Metrics, outcome: SettledCall) -> None:
    economy = str(outcome.economy_id)
    for token_class, count in (
        ("cached", outcome.cached_tokens),
        ("cache_write", outcome.cache_write_tokens),
        ("reasoning", outcome.reasoning_tokens),
    ):
        if count:
            metrics.tokens_of(economy, token_class).inc(count)


def call_settled(
    metrics: Metrics | None,
    listed: Container[str],
    call: AttemptFacts,
    outcome: SettledCall,
    cost: int | None,
) -> None:
    """Every call's one ending: its duration, tokens and cost; its figures for the access record."""
    error_type = error_type_of(outcome)
    if metrics is not None:
        series = metrics.series(
            outcome.provider,
            outcome.model,
            outcome.endpoint,
            error_type,
            answered=outcome.status == "ok",
            listed=listed,
        )
        series.duration.observe(outcome.latency_ms / 1000)
        if outcome.stream and outcome.ttft_ms is not None and not error_type:
            series.ttft.observe(outcome.ttft_ms / 1000)
        if outcome.prompt_tokens:
            series.input_tokens.observe(outcome.prompt_tokens)
        if outcome.completion_tokens:
            series.output_tokens.observe(outcome.completion_tokens)
        if cost:
            metrics.cost_of(str(outcome.economy_id)).inc(cost)
        if outcome.cached_tokens or outcome.cache_write_tokens or outcome.reasoning_tokens:
            _count_classes(metrics, outcome)
    request = CURRENT.get()
    if request is not None:
        request.model = outcome.model
        request.provider = outcome.provider
        request.economy_id = str(outcome.economy_id)
        request.prompt_tokens = outcome.prompt_tokens
        request.completion_tokens = outcome.completion_tokens
        request.cost = str(cost) if cost is not None else None
        request.attempts = outcome.attempt
        if tracing.ON:
            tracing.call_settled(request, outcome)


def watch_writer(writer: Any, metrics: Metrics) -> None:
    _WRITERS[writer] = metrics


def usage_batch_written(writer: Any, started: float, queued: int) -> None:
    """The usage writer wrote a batch begun at `started` (perf_counter); `queued` records wait."""
    metrics = _WRITERS.get(writer)
    if metrics is not None:
        metrics.commit_seconds.observe(time.perf_counter() - started)
        metrics.queue_depth.set(queued)
