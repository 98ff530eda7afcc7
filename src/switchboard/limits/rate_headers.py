"""The headers a call under limits answers with (SPEC §13), as OpenAI sends them: x-ratelimit-* for the
tightest requests and tokens limits, and x-switchboard-budget-remaining for the tightest cost limit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from switchboard.kit.clock import utcnow
from switchboard.limits import ledger
from switchboard.limits.ledger import Standing
from switchboard.limits.rules import Limit, openai_duration

# For the metrics with OpenAI's headers, in the order they are sent: a limit's, remaining and reset names.
_REQUESTS = ("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests")
_TOKENS = ("x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens")


def rate_headers(
    standings: list[Standing], needs: Sequence[int] | None = None, now: datetime | None = None
) -> dict[str, str]:
    """OpenAI's x-ratelimit-* for the tightest requests and tokens limits, and the budget left.

    `needs`: by position in `standings`, what the call holds (None: nothing, or taken off already).
    `now` is read here only for a calendar window's reset (a rolling one's is its refill time): most
    calls have none among their requests and tokens limits."""
    requests = tokens = cost = None  # the tightest limit of each metric, and what it has left after
    requests_left = tokens_left = cost_left = 0
    for index, standing in enumerate(standings):
        limit = standing.limit
        left = standing.remaining - needs[index] if needs is not None else standing.remaining
        metric = limit.metric
        if metric == "requests":
            if requests is None or left < requests_left:
                requests, requests_left = limit, left
        elif metric == "tokens":
            if tokens is None or left < tokens_left:
                tokens, tokens_left = limit, left
        elif cost is None or left < cost_left:
            cost, cost_left = limit, left
    headers: dict[str, str] = {}
    if requests is not None:
        _rate_headers(headers, _REQUESTS, requests, requests_left, now)
    if tokens is not None:
        _rate_headers(headers, _TOKENS, tokens, tokens_left, now)
    if cost is not None:
        headers["x-switchboard-budget-remaining"] = str(cost_left) if cost_left > 0 else "0"
    return headers


def _rate_headers(
    headers: dict[str, str], names: tuple[str, str, str], limit: Limit, left: int, now: datetime | None
) -> None:
    limit_name, remaining_name, reset_name = names
    if left < 0:
        left = 0
    headers[limit_name] = str(limit.amount)
    headers[remaining_name] = str(left)
    if limit.rolling:
        reset = ledger.refill_seconds(limit, limit.amount - left)
    else:
        reset = ledger.reset_seconds(limit, limit.amount - left, now if now is not None else utcnow())
    headers[reset_name] = openai_duration(reset)
