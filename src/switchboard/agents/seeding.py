"""System-tier agents declared under `agents:` in the config file, stored once however many replicas start."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import CursorResult, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.agents.models import AgentVersion
from switchboard.agents.publishing import new_row
from switchboard.agents.schemas import AgentSpec
from switchboard.agents.validation import ResolutionRules, resolve_spec
from switchboard.config_file import ConfigError
from switchboard.db.upsert import insert_for
from switchboard.errors import Unprocessable

log = logging.getLogger("switchboard.agents")


def seed_specs(entries: Sequence[dict[str, Any]], rules: ResolutionRules) -> list[AgentSpec]:
    """Parse and resolve the config's agents; a bad one stops start-up naming `agents.<n>.<field>`."""
    specs: list[AgentSpec] = []
    for index, entry in enumerate(entries):
        data = {"source": "seed", **entry}
        if data["source"] != "seed":
            raise ConfigError(f"agents.{index}.source: config agents are system agents (source `seed`)")
        try:
            spec = AgentSpec.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in ("agents", index, *first["loc"]))
            raise ConfigError(f"{where}: {first['msg']}") from None
        try:
            resolve_spec(spec, rules)
        except Unprocessable as exc:
            problem = exc.details["problems"][0] if isinstance(exc.details, dict) else {}
            where = f"agents.{index}.{problem.get('field', 'id')}"
            raise ConfigError(f"{where}: {problem.get('problem')}") from None
        if any((spec.id, spec.version) == (s.id, s.version) for s in specs):
            raise ConfigError(f"agents.{index}.version: {spec.id} {spec.version} is declared twice")
        specs.append(spec)
    return specs


def _insert_ignoring_duplicates(session: AsyncSession, row: AgentVersion) -> Any:
    values = {
        column.key: getattr(row, column.key)
        for column in AgentVersion.__table__.columns
        if column.key != "row_id"
    }
    insert = insert_for(session.get_bind().dialect.name)
    statement = insert(AgentVersion).values(**values)
    return statement.on_conflict_do_nothing(index_elements=["agent_id", "version"])


async def seed_agents(sessionmaker: async_sessionmaker[AsyncSession], specs: Sequence[AgentSpec]) -> int:
    """Insert each (id, version) not stored yet; replicas racing at start insert each row once.

    A stored version is never rewritten: publishing a change to a seed agent means a new `version`.
    """
    added = 0
    async with sessionmaker() as session, session.begin():
        for spec in specs:
            owners = set(
                await session.scalars(
                    select(AgentVersion.source).where(AgentVersion.agent_id == spec.id).distinct()
                )
            )
            if owners - {"seed"}:
                log.error("config agent %s not seeded: the id is taken by a published agent", spec.id)
                continue
            result = await session.execute(_insert_ignoring_duplicates(session, new_row(spec, None)))
            added += cast(CursorResult[Any], result).rowcount or 0
    if added:
        log.info("seeded %d config agent version(s)", added)
    return added
