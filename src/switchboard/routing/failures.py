"""What an attempt's failure means for the call (SPEC §14): try again, move on, or stop.

Read from the error's type, never its text: provider_errors.py maps every provider failure to one.
"""

from __future__ import annotations

import email.utils
import enum
import math
import time

from switchboard.errors import (
    RateLimited,
    SwitchboardError,
    UpstreamConnectionFailed,
    UpstreamCredentialRejected,
    UpstreamDropped,
    UpstreamFailed,
    UpstreamTimeout,
    UpstreamUnanswered,
)

MAX_COOLDOWN_S = 24 * 3600.0


class Verdict(enum.Enum):
    RETRY = "retry"  # nothing sent (connect error or timeout): the same route again, then the next
    FAILED = "failed"  # the provider failed (5xx, Anthropic's 529): the next route
    RATE_LIMITED = "rate_limited"  # 429: the next route; this one cools down for its Retry-After
    REJECTED = "rejected"  # the key was refused: the next route; this key waits for a new secret
    STOP = "stop"  # the request's own fault (other 4xx) or the call's end: no other attempt


def verdict_of(error: BaseException) -> Verdict:
    if isinstance(error, UpstreamDropped | UpstreamUnanswered):  # it may have run: never sent again (§21)
        return Verdict.STOP
    if isinstance(error, UpstreamTimeout | UpstreamConnectionFailed):
        return Verdict.RETRY
    if isinstance(error, RateLimited):
        return Verdict.RATE_LIMITED
    if isinstance(error, UpstreamCredentialRejected):
        return Verdict.REJECTED
    if isinstance(error, UpstreamFailed):
        return Verdict.FAILED
    return Verdict.STOP


def retry_after_s(error: BaseException) -> float | None:
    """A 429's Retry-After in seconds (delta-seconds or an HTTP date), if it carries one."""
    value = error.headers.get("Retry-After") if isinstance(error, SwitchboardError) else None
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def cooldown_of(error: BaseException, default_s: float) -> float:
    seconds = retry_after_s(error)
    return min(seconds if seconds is not None else default_s, MAX_COOLDOWN_S)


def final_error(errors: list[BaseException]) -> BaseException:
    """What the client gets when every attempt failed: the last failure, or, when every one was
    rate-limited, a 429 with the smallest Retry-After (the soonest any route frees up)."""
    last = errors[-1]
    if len(errors) == 1 or not all(isinstance(error, RateLimited) for error in errors):
        return last
    waits = [(seconds, error) for error in errors if (seconds := retry_after_s(error)) is not None]
    if not waits:
        return last
    return min(waits, key=lambda pair: pair[0])[1]
