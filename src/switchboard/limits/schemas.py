"""Wire shapes of limits and their status; amounts are integer strings (SPEC §4), never JSON numbers."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)

from switchboard.kit.amounts import MAX_AMOUNT, parse_amount

SubjectTypeIn = Literal["economy", "user", "room", "agent", "api_key"]
MetricIn = Literal["cost", "requests", "tokens"]
WindowIn = Literal["minute", "hour", "day", "month", "total"]
Ref = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]


def _amount(value: object) -> str:
    # Before any coercion: a JSON number is refused, never rounded or turned into text.
    parsed = parse_amount(value)
    if parsed is None:
        raise ValueError(f'an integer string from "0" to "{MAX_AMOUNT}" such as "1500", not a JSON number')
    return str(parsed)  # "007" is stored as "7"


Amount = Annotated[str, BeforeValidator(_amount)]


class LimitCreate(BaseModel):
    """`subject_id` and `economy_id` name an economy by id or slug; the id is stored."""

    model_config = ConfigDict(extra="forbid")

    subject_type: SubjectTypeIn
    subject_id: Ref
    economy_id: Ref | None = Field(default=None, description="narrows a non-economy limit to one economy")
    metric: MetricIn
    window: WindowIn
    amount: Amount = Field(description="integer string: nano-units for cost, else requests or tokens")
    allow_unpriced: StrictBool = False


class LimitUpdate(BaseModel):
    """Only the amount and `allow_unpriced` change; a limit on something else is a new limit."""

    model_config = ConfigDict(extra="forbid")

    amount: Amount | None = None
    allow_unpriced: StrictBool | None = None

    @model_validator(mode="after")
    def _no_null(self) -> LimitUpdate:
        for name in ("amount", "allow_unpriced"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class LimitOut(BaseModel):
    id: uuid.UUID
    subject_type: SubjectTypeIn
    subject_id: str
    economy_id: uuid.UUID | None
    metric: MetricIn
    window: WindowIn
    amount: str = Field(description="integer string")
    allow_unpriced: bool
    managed_by: Literal["api", "config", "budget"] = Field(
        description="`config` and `budget` limits change only in the config file or the economy's budget"
    )
    created_by: uuid.UUID | None
    authority: Literal["owner", "admin", "superadmin", "operator"] = Field(
        description="who set the limit last; only that authority or above may change or delete it"
    )
    created_at: datetime


class LimitStatusOut(BaseModel):
    used: str = Field(description="integer string: counted in the current window")
    reserved: str = Field(description="integer string: held by calls still running")
    remaining: str = Field(description="integer string: amount - used - reserved, at least 0")
    resets_at: datetime | None = Field(description="null for `total`, which never resets")


class MyLimitOut(LimitOut):
    status: LimitStatusOut
