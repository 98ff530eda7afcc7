"""Alembic environment: runs on the connection handed over by `switchboard.db.migrate`."""

from __future__ import annotations

from alembic import context

from switchboard.db.base import Base
from switchboard.db.models_registry import import_all_models

import_all_models()
target_metadata = Base.metadata
connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `switchboard db upgrade`")
context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
