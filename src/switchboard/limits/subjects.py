"""What a limit may be put on: the form of each kind of subject id, and whether the subject exists."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.registry import agent_exists
from switchboard.auth.api_keys import api_key_exists
from switchboard.errors import NotFound, ValidationFailed
from switchboard.groups.service import room_exists
from switchboard.metering.service import Economy, find_economy

# Every subject but an agent is named by a UUID; agents by their registry id (agent_versions.agent_id).
UUID_SUBJECTS = frozenset({"user", "room", "api_key"})
MAX_AGENT_ID = 64


def subject_form(subject_type: str, subject_id: str) -> str:
    """The stored form of a subject id, or 400: UUIDs in their canonical text; economies stay a ref."""
    text = subject_id.strip()
    if subject_type in UUID_SUBJECTS:
        try:
            return str(uuid.UUID(text))
        except ValueError:
            raise ValidationFailed(
                f"subject_id: a {subject_type} is named by its id (a UUID)", param="subject_id"
            ) from None
    if not text or (subject_type == "agent" and len(text) > MAX_AGENT_ID):
        raise ValidationFailed(
            f"subject_id: an agent id is 1 to {MAX_AGENT_ID} characters", param="subject_id"
        )
    return text


async def economy_named(session: AsyncSession, ref: str, what: str = "economy") -> Economy:
    """An economy by id or slug; 404 when there is none."""
    economy = await find_economy(session, ref)
    if economy is None:
        raise NotFound(f"{what} not found")
    return economy


async def require_subject(session: AsyncSession, subject_type: str, subject_id: str) -> None:
    """404 unless the subject (in its stored form) exists. Economies are checked when named. Users
    are not checked: a user of the auth service is known only by the `sub` of their tokens, and a
    limit must be possible before their first call."""
    if subject_type in ("economy", "user"):
        return
    if subject_type == "agent":
        found = await agent_exists(session, subject_id)
    elif subject_type == "room":
        found = await room_exists(session, uuid.UUID(subject_id))
    else:
        found = await api_key_exists(session, uuid.UUID(subject_id))
    if not found:
        label = {"room": "working group", "api_key": "API key"}.get(subject_type, subject_type)
        raise NotFound(f"{label} {subject_id} not found")
