"""Wire shapes of webhooks and their deliveries; the signing secret appears only in the 201 of POST."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)

from switchboard.webhooks.events import EVENT_TYPES

Url = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=2048)]
Ref = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]


def _events(value: list[str]) -> list[str]:
    unknown = [name for name in value if name not in EVENT_TYPES]
    if unknown:
        raise ValueError(f"unknown event {unknown[0]!r}; events are {', '.join(EVENT_TYPES)}")
    return list(dict.fromkeys(value))  # repeated names once, in the order given


Events = Annotated[
    list[Annotated[str, StringConstraints(strict=True, max_length=64)]],
    Field(min_length=1, max_length=len(EVENT_TYPES) * 4),
    AfterValidator(_events),
]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: Url = Field(
        description="https URL (http and private addresses only with SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS)"
    )
    events: Events = Field(description=f"one or more of {', '.join(EVENT_TYPES)}")
    economy_id: Ref | None = Field(
        default=None, description="id or slug: only this economy's events; omitted (Admins): every event"
    )
    active: StrictBool = True


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: Url | None = None
    events: Events | None = None
    active: StrictBool | None = None

    @model_validator(mode="after")
    def _no_null(self) -> WebhookUpdate:
        for name in ("url", "events", "active"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class WebhookOut(BaseModel):
    id: uuid.UUID
    url: str
    events: list[str]
    economy_id: uuid.UUID | None
    active: bool
    created_by: uuid.UUID
    created_at: datetime
    updated_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(description="`whsec_…` signing secret (Standard Webhooks); shown this once only")


DeliveryStatus = Literal["pending", "delivered", "failed"]


class DeliveryOut(BaseModel):
    id: str = Field(description="the `webhook-id` header of every attempt: msg_…")
    webhook_id: uuid.UUID
    event_type: str
    status: DeliveryStatus
    attempts: int
    last_error: str | None = Field(
        description="timeout, connect_failed, forbidden_address, network_error, non_2xx"
    )
    response_status: int | None = Field(description="the receiver's HTTP status at the last attempt")
    created_at: datetime
    last_attempt_at: datetime | None
    next_attempt_at: datetime | None
    delivered_at: datetime | None
