"""Discovery: free-text match over the caller's active agents, busiest first."""

from __future__ import annotations

import re
import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.models import AgentVersion
from switchboard.agents.registry import newest_active
from switchboard.agents.schemas import DiscoverRequest, DiscoverResult, DiscoveryHit
from switchboard.agents.visibility import audience_of
from switchboard.auth.principal import Principal
from switchboard.errors import ValidationFailed
from switchboard.metering import service as metering

_WORD = re.compile(r"[^\W_]+")
# Words that would match nearly every agent and drown the ones the query is about.
_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "for",
        "from",
        "help",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "need",
        "of",
        "on",
        "or",
        "please",
        "that",
        "the",
        "to",
        "who",
        "with",
        "would",
        "you",
    }
)


def hit_id(agent_id: str) -> uuid.UUID:
    """The same UUID for an agent on every replica and across versions."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:agent:{agent_id}")


def query_terms(query: str) -> set[str]:
    return {word for word in _WORD.findall(query.lower()) if word not in _STOP_WORDS}


def capabilities_of(row: AgentVersion) -> list[str]:
    return [str(skill.get("name", "")) for skill in row.spec.get("skills") or []]


def match_score(row: AgentVersion, terms: set[str]) -> int:
    """How many query terms start a word of the agent's role, name, expertise or capabilities."""
    texts = [row.role, row.display_name, *(row.spec.get("expertise") or []), *capabilities_of(row)]
    words = {word for text in texts for word in _WORD.findall(str(text).lower())}
    return sum(1 for term in terms if any(word.startswith(term) for word in words))


def hit_of(row: AgentVersion) -> DiscoveryHit:
    return DiscoveryHit(
        id=hit_id(row.agent_id),
        agent_key=row.agent_id,
        display_name=row.display_name,
        role=row.role,
        expertise=list(row.spec.get("expertise") or []),
        focus=row.spec.get("focus"),
        capabilities=capabilities_of(row),
    )


async def discover(session: AsyncSession, principal: Principal, request: DiscoverRequest) -> DiscoverResult:
    terms = query_terms(request.query)
    if not terms:
        raise ValidationFailed(
            "query has no searchable words",
            param="query",
            details={"field": "query", "problem": "no searchable words"},
        )
    rows = await newest_active(session, await audience_of(session, principal))
    scored = [(row, score) for row in rows if (score := match_score(row, terms)) > 0]
    busy = await metering.sessions_per_agent(session, [row.agent_id for row, _ in scored])
    # Busiest first (the seed's order); then the closer match; then the id, so ties never flap.
    scored.sort(key=lambda item: (-busy.get(item[0].agent_id, 0), -item[1], item[0].agent_id))
    return DiscoverResult(agents=[hit_of(row) for row, _ in scored[: request.top_k]])
