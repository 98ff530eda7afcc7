"""Wire shapes of the agents registry: the seed's AgentSpec, summary, creation result and discovery hit."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool, StrictInt, StrictStr

Source = Literal["seed", "user", "team_construction"]
ReasoningEffort = Literal["low", "medium", "high", "max"]
SelectorKind = Literal["default", "tagged", "exact", "alias"]
DEFAULT_MAX_TOKENS = 4000

# Ids appear in paths, in `model: "agent:<id>"` and in usage records (64 characters), so they stay short
# and URL-safe.
AgentId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
VersionLabel = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]
ShortText = Annotated[StrictStr, Field(min_length=1, max_length=200)]
LongText = Annotated[StrictStr, Field(max_length=200_000)]
OptionalText = Annotated[StrictStr | None, Field(max_length=20_000)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Skill(_Wire):
    name: StrictStr = Field(max_length=200)
    prompt_addendum: LongText
    tool_grants: JsonValue = None


class ModelSelector(_Wire):
    """`{kind: default}`, `{kind: tagged, tag}`, `{kind: exact, provider, model}`, `{kind: alias, alias}`."""

    kind: SelectorKind
    tag: StrictStr | None = None
    provider: StrictStr | None = None
    model: StrictStr | None = None
    alias: StrictStr | None = None


class AgentSpec(_Wire):
    id: AgentId
    version: VersionLabel
    display_name: ShortText
    role: ShortText
    goal: LongText
    source: Source
    system_prompt: LongText
    skills: list[Skill] = Field(default_factory=list)
    model: ModelSelector | None = None
    reasoning_effort: ReasoningEffort | None = None
    max_tokens: StrictInt = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=10_000_000)
    tools: JsonValue = None
    context_builder: StrictStr = Field(default="summarised", max_length=200)
    output_parser: StrictStr = Field(default="tool_calls", max_length=200)
    memory_enabled: StrictBool = False
    created_by: StrictStr | None = Field(default=None, max_length=200)
    economy_id: uuid.UUID | None = None
    working_group_id: uuid.UUID | None = None
    user_id: StrictStr | None = Field(default=None, max_length=200)
    # Checked during resolution (422), not here, as SPEC §9 lists it among the binding checks.
    pinned_kg_ids: list[StrictStr] = Field(default_factory=list)
    personality: OptionalText = None
    expertise: list[Annotated[StrictStr, Field(max_length=200)]] = Field(default_factory=list)
    focus: OptionalText = None
    anti_focus: OptionalText = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class AgentDetail(AgentSpec):
    """`GET /agents/{id}`: the newest non-retired version's full spec and when it was created."""

    created_at: datetime


class AgentSummary(BaseModel):
    id: str
    version: str
    display_name: str
    role: str
    source: Source
    created_by: str | None = None
    working_group_id: uuid.UUID | None = None


class AgentVersionEntry(AgentSummary):
    created_at: datetime
    retired: bool
    retired_at: datetime | None = None


class AgentCreated(BaseModel):
    id: str
    version: str


class ResolvedSpec(BaseModel):
    """What a valid spec binds to: its selector, candidate models, tools and scope."""

    selector: str
    models: list[str]
    skills: list[str]
    tools: list[str]
    pinned_kg_ids: list[uuid.UUID]
    visibility: Literal["system", "user", "room", "economy"]
    working_group_id: uuid.UUID | None = None
    economy_id: uuid.UUID | None = None


class ValidationResult(BaseModel):
    valid: Literal[True] = True
    resolved: ResolvedSpec


class DiscoverRequest(_Wire):
    query: Annotated[StrictStr, Field(min_length=1, max_length=2_000)]
    top_k: StrictInt = Field(default=4, ge=1)


class DiscoveryHit(BaseModel):
    id: uuid.UUID
    agent_key: str
    display_name: str
    role: str
    expertise: list[str] = Field(default_factory=list)
    focus: str | None = None
    capabilities: list[str] = Field(default_factory=list)


class DiscoverResult(BaseModel):
    agents: list[DiscoveryHit]


class RegistryErrorDetail(BaseModel):
    code: str
    message: str
    details: str | dict[str, JsonValue] | None = None


class RegistryError(BaseModel):
    """The nested envelope every registry operation answers errors with."""

    error: RegistryErrorDetail
