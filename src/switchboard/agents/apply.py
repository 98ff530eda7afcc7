"""Applying an agent to a `/v1` call (`model: "agent:<id>"`): its prompt, limits, selector, room, economy."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.registry import detail_of, newest_active_of
from switchboard.agents.schemas import AgentSpec
from switchboard.agents.validation import selector_text
from switchboard.agents.visibility import audience_of
from switchboard.auth.principal import Principal
from switchboard.errors import NotFound

# OpenAI-format providers know low/medium/high; the seed's `max` asks for the most they offer.
_WIRE_EFFORT = {"low": "low", "medium": "medium", "high": "high", "max": "high"}


@dataclass(frozen=True)
class AppliedAgent:
    """What the `/v1` route continues with after applying an agent."""

    agent_id: str
    version: str
    selector: str  # `default`, `tag:<t>`, `<provider>/<model>` or an alias: never `agent:` again
    room_id: uuid.UUID | None  # the agent's room, only when the caller is a member of it
    economy_id: uuid.UUID | None
    body: dict[str, Any]  # a new request body; the caller's is not modified


def system_message(spec: AgentSpec) -> str:
    parts = [spec.system_prompt, *(skill.prompt_addendum for skill in spec.skills)]
    return "\n\n".join(part for part in parts if part.strip())


def applied_body(spec: AgentSpec, body: dict[str, Any]) -> dict[str, Any]:
    """The request with the agent's system message first and its limits where the caller set none."""
    new = dict(body)
    messages = body.get("messages")
    leading = system_message(spec)
    if leading:
        rest = list(messages) if isinstance(messages, list) else []
        new["messages"] = [{"role": "system", "content": leading}, *rest]
    # `max_completion_tokens` is OpenAI's newer name for the same limit; sending both is an error there.
    if "max_tokens" not in body and "max_completion_tokens" not in body:
        new["max_tokens"] = spec.max_tokens
    if spec.reasoning_effort is not None and "reasoning_effort" not in body:
        new["reasoning_effort"] = _WIRE_EFFORT[spec.reasoning_effort]
    return new


async def apply_agent(
    session: AsyncSession, principal: Principal, agent_id: str, body: dict[str, Any]
) -> AppliedAgent:
    """The newest non-retired version of the agent the caller sees; otherwise `model_not_found`."""
    audience = await audience_of(session, principal)
    row = await newest_active_of(session, audience, agent_id)
    if row is None:
        raise NotFound(f"model 'agent:{agent_id}' not found", param="model", openai_code="model_not_found")
    spec = detail_of(row)
    # Any member role counts here; whether a viewer may spend the room's credentials is decided later.
    room_id = spec.working_group_id if spec.working_group_id in audience.room_ids else None
    return AppliedAgent(
        agent_id=spec.id,
        version=spec.version,
        selector=selector_text(spec),
        room_id=room_id,
        economy_id=spec.economy_id,
        body=applied_body(spec, body),
    )
