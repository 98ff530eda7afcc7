"""CORS for /v1 when SWITCHBOARD_CORS_ORIGINS names origins: preflights answered, headers exposed."""

from __future__ import annotations

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

# What a browser client needs to read from an answer: ids, routing and limit headers.
EXPOSED_HEADERS = (
    "x-request-id",
    "x-switchboard-model",
    "x-switchboard-credential",
    "x-switchboard-attempts",
    "x-switchboard-max-tokens",
    "x-switchboard-budget-remaining",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "retry-after",
    "idempotent-replayed",
)


def v1_cors(app: ASGIApp, origins: tuple[str, ...]) -> ASGIApp:
    """Wraps the /v1 dispatch. Any request header is allowed: browser SDKs send their own
    (`x-stainless-*`, `anthropic-version`, …), and with bearer tokens and no cookies
    (credentials are never allowed) a header grants a page nothing it could not send anyway."""
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "OPTIONS"],
        allow_headers=["*"],
        allow_credentials=False,
        expose_headers=list(EXPOSED_HEADERS),
        max_age=600,
    )
