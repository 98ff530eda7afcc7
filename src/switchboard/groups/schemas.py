"""Wire shapes of rooms and members."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

RoomRole = Literal["owner", "manager", "member", "viewer"]
RoomName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Description = Annotated[str, StringConstraints(max_length=2000)]


class _Input(BaseModel):
    # Unknown fields are refused so that a typo is a 400, not a silently ignored value.
    model_config = ConfigDict(extra="forbid")


class RoomCreate(_Input):
    name: RoomName
    description: Description | None = None
    default_economy_id: uuid.UUID | None = None


class RoomUpdate(_Input):
    """Only the fields present change; `null` clears description and default economy."""

    name: RoomName | None = None
    description: Description | None = None
    default_economy_id: uuid.UUID | None = None


class RoomOut(BaseModel):
    id: uuid.UUID
    name: str
    description: str | None
    default_economy_id: uuid.UUID | None
    created_by: uuid.UUID
    created_at: datetime
    updated_at: datetime
    role: RoomRole = Field(description="the caller's role in this room")


class MemberAdd(_Input):
    user_id: uuid.UUID
    role: RoomRole = "member"


class MemberUpdate(_Input):
    role: RoomRole


class MemberOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    room_id: uuid.UUID
    user_id: uuid.UUID
    role: RoomRole
    added_by: uuid.UUID
    created_at: datetime
    updated_at: datetime
