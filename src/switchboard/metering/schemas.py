"""Wire shapes of economies, participants and usage records (amounts are integer strings)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    StringConstraints,
    field_validator,
    model_serializer,
    model_validator,
)

from switchboard.config_file import PRICE_KEYS
from switchboard.metering.economies import AMOUNT_PATTERN, as_uuid
from switchboard.upstream import providers

# Nano-units, no sign, no leading zeros; a JSON number is refused (strict), never rounded.
Amount = Annotated[str, StringConstraints(strict=True, pattern=AMOUNT_PATTERN)]
Slug = Annotated[
    str, StringConstraints(strict=True, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
]
Currency = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9]{1,16}$")]
Name = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]
MarkupBps = Annotated[StrictInt, Field(ge=0, le=1_000_000)]
PriceText = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=40)]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _price(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parsed = Decimal(value)
    except InvalidOperation:
        raise ValueError('a price is a decimal string such as "0.15"') from None
    if not parsed.is_finite() or parsed < 0:
        raise ValueError("a price is a finite decimal >= 0")
    return value


class PriceTierIn(_Input):
    """SPEC §20's price keys: per-million prices of each token class, as decimal strings."""

    input_per_mtok: PriceText | None = None
    output_per_mtok: PriceText | None = None
    cache_read_per_mtok: PriceText | None = None
    cache_write_per_mtok: PriceText | None = None
    cache_write_1h_per_mtok: PriceText | None = None
    reasoning_per_mtok: PriceText | None = None

    _decimal = field_validator(*PRICE_KEYS)(_price)


class PriceOverrideIn(PriceTierIn):
    above_200k: PriceTierIn | None = None


def _check_override_keys(value: dict[str, PriceOverrideIn] | None) -> dict[str, PriceOverrideIn] | None:
    for key in value or {}:
        provider, sep, model = key.partition("/")
        if not sep or not providers.is_known(provider) or not model:
            raise ValueError(f"{key!r} is not <provider>/<model> with a provider GET /providers lists")
    return value


class EconomyCreate(_Input):
    slug: Slug
    name: Name
    currency: Currency = "USD"
    markup_bps: MarkupBps = 0
    price_overrides: dict[str, PriceOverrideIn] = Field(default_factory=dict)
    budget: Amount | None = None

    _keys = field_validator("price_overrides")(_check_override_keys)

    @field_validator("slug")
    @classmethod
    def _not_an_id(cls, value: str) -> str:
        # Paths take an id or a slug; a slug that reads as a UUID would make that ambiguous.
        if as_uuid(value) is not None:
            raise ValueError("a slug must not look like a UUID")
        return value


class EconomyUpdate(_Input):
    """Only the fields present change; `budget: null` removes the budget."""

    name: Name | None = None
    currency: Currency | None = None
    markup_bps: MarkupBps | None = None
    price_overrides: dict[str, PriceOverrideIn] | None = None
    budget: Amount | None = None

    _keys = field_validator("price_overrides")(_check_override_keys)

    @model_validator(mode="after")
    def _no_null_for_required(self) -> EconomyUpdate:
        for name in ("name", "currency", "markup_bps", "price_overrides"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class PriceTierOut(BaseModel):
    """Input and output always (null when not stated); the other classes' keys only when stated."""

    input_per_mtok: str | None
    output_per_mtok: str | None
    cache_read_per_mtok: str | None = None
    cache_write_per_mtok: str | None = None
    cache_write_1h_per_mtok: str | None = None
    reasoning_per_mtok: str | None = None

    @model_serializer(mode="wrap")
    def _stated_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if v is not None or k in _ALWAYS_SHOWN}


_ALWAYS_SHOWN = frozenset({"input_per_mtok", "output_per_mtok"})


class PriceOverrideOut(PriceTierOut):
    above_200k: PriceTierOut | None = None


class EconomyOut(BaseModel):
    id: uuid.UUID
    slug: str
    name: str
    currency: str
    markup_bps: int
    price_overrides: dict[str, PriceOverrideOut]
    budget: str | None
    managed_by: Literal["config", "api"]
    created_at: datetime
    updated_at: datetime


class ParticipantIn(_Input):
    """A user `{"user_id", "role"}` or a room `{"room_id"}` (rooms are members)."""

    user_id: uuid.UUID | None = None
    room_id: uuid.UUID | None = None
    role: Literal["owner", "member"] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ParticipantIn:
        if (self.user_id is None) == (self.room_id is None):
            raise ValueError("give exactly one of user_id and room_id")
        if self.room_id is not None and self.role == "owner":
            raise ValueError("a room participates as a member; owners are users")
        return self


class ParticipantOut(BaseModel):
    economy_id: uuid.UUID
    kind: Literal["user", "room"]
    user_id: uuid.UUID | None
    room_id: uuid.UUID | None
    role: Literal["owner", "member"]
    created_at: datetime


class UsageRecordOut(BaseModel):
    id: uuid.UUID
    request_id: str
    occurred_at: datetime
    economy_id: uuid.UUID
    user_id: uuid.UUID
    room_id: uuid.UUID | None
    agent_id: str | None
    session_id: str | None
    credential_id: uuid.UUID | None
    credential_scope: str
    provider: str
    model: str
    selector: str
    endpoint: str
    stream: bool
    status: Literal["ok", "error", "cancelled", "abandoned"]
    error_code: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost: str = Field(description="nano-units of the economy's currency, as an integer string")
    priced: bool
    input_per_mtok: str | None = Field(description="price used, currency units per million tokens")
    output_per_mtok: str | None
    markup_bps: int
    price_source: str | None
    latency_ms: int
    ttft_ms: int | None
    idempotency_key: str | None
    usage_estimated: bool = Field(
        default=False, description="tokens estimated by the gateway: the provider's count never arrived"
    )
    attempt: int = Field(
        default=1, description="which attempt of the call this is (1, 2, …); attempts share request_id"
    )
    # SPEC §20's token classes, after every earlier field (so the export's new columns come last).
    cache_write_tokens: int = Field(default=0, description="input tokens written to the provider's cache")
    cache_write_1h_tokens: int = Field(default=0, description="of cache_write_tokens, those kept for an hour")
    service_tier: str | None = Field(default=None, description="the service tier the answer names")
    prices: dict[str, str] | None = Field(
        default=None, description="the per-million price applied to each token class (class -> price)"
    )
    cache_hit: bool = Field(
        default=False, description="served from the response cache: the stored answer's tokens, cost 0"
    )


GroupBy = Literal["day", "model", "user", "agent", "room"]
SummaryValue = str | int | None


class SummaryOut(BaseModel):
    """`rows`: one per group, `{<group_by>: key, requests, prompt_tokens, completion_tokens, cost, ...}`."""

    group_by: GroupBy
    rows: list[dict[str, SummaryValue]]
    totals: dict[str, SummaryValue]
