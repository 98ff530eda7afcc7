"""Imports every domain's tables so that metadata is complete (Alembic, tests)."""

from __future__ import annotations

import importlib

DOMAIN_MODEL_MODULES = (
    "switchboard.idempotency.models",
    "switchboard.auth.models",
    "switchboard.groups.models",
    "switchboard.credentials.models",
    "switchboard.metering.models",
    "switchboard.agents.models",
    "switchboard.limits.models",
    "switchboard.webhooks.models",
    "switchboard.audit.models",
    "switchboard.cache.models",
)


def import_all_models() -> None:
    for name in DOMAIN_MODEL_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
