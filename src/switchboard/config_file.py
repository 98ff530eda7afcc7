"""The operator's YAML config (SPEC §6): its typed shape and a loader that names the failing line."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from switchboard.upstream import providers

# Any kind upstream/providers.py knows: the native three and every other provider litellm supports.
ProviderKind = Annotated[str, AfterValidator(providers.checked_kind)]


class ConfigError(Exception):
    """The config file cannot be used; the message names the file and line."""


def _decimal_string(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError('a price is a decimal string such as "0.15"')
    try:
        parsed = Decimal(str(value))
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a decimal number") from exc
    if parsed < 0 or not parsed.is_finite():
        raise ValueError("a price must be a finite number >= 0")
    return str(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoutingEntry(_Strict):
    """`routing:` (SPEC §14), for the whole catalog or one model; a key left out keeps the default."""

    retries: int | None = Field(default=None, ge=0, le=10)
    cooldown_s: float | None = Field(default=None, gt=0, le=86_400)
    first_byte_timeout_s: float | None = Field(default=None, gt=0, le=3_600)
    connect_timeout_s: float | None = Field(default=None, gt=0, le=600)


# SPEC §20's price keys, in the catalog and in economy overrides alike (metering/pricing.py's CLASSES).
PRICE_KEYS = (
    "input_per_mtok",
    "output_per_mtok",
    "cache_read_per_mtok",
    "cache_write_per_mtok",
    "cache_write_1h_per_mtok",
    "reasoning_per_mtok",
)


class PriceTier(_Strict):
    """Per-million prices of each token class; a class left out takes the input (cache reads and
    writes) or output (reasoning) price."""

    input_per_mtok: str | None = None
    output_per_mtok: str | None = None
    cache_read_per_mtok: str | None = None
    cache_write_per_mtok: str | None = None
    cache_write_1h_per_mtok: str | None = None
    reasoning_per_mtok: str | None = None

    _check_prices = field_validator(*PRICE_KEYS, mode="before")(_decimal_string)


class PriceOverride(PriceTier):
    above_200k: PriceTier | None = None  # every class of a call above 200,000 prompt tokens


# The longest a cached answer is kept (SPEC §23), from the catalog or a request's header alike.
MAX_CACHE_TTL_S = 7 * 24 * 3600


class CacheEntry(_Strict):
    """`cache:` on a model or an alias (SPEC §23): answers are kept and served again for `ttl_s`."""

    ttl_s: int = Field(ge=1, le=MAX_CACHE_TTL_S)


class ModelEntry(PriceOverride):
    provider: ProviderKind
    model: str = Field(min_length=1)
    tags: tuple[str, ...] = ()
    kind: Literal["chat", "embedding"] = "chat"
    routing: RoutingEntry | None = None
    cache: CacheEntry | None = None

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"


class DeploymentCredentialEntry(_Strict):
    provider: ProviderKind
    api_key_env: str = Field(min_length=1)  # a JSON object for azure and bedrock (providers.SECRET_SHAPES)
    base_url: str | None = None

    @model_validator(mode="after")
    def _usable(self) -> DeploymentCredentialEntry:
        # The operator's own base_url is trusted: only the rules that do not concern addresses apply.
        problem = providers.refusal(self.provider, self.base_url, allow_private=True)
        if problem is not None:
            raise ValueError(problem)
        return self


class EconomyEntry(_Strict):
    slug: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    name: str = Field(min_length=1)
    currency: str = "USD"
    markup_bps: int = Field(default=0, ge=0, le=1_000_000)
    price_overrides: dict[str, PriceOverride] = Field(default_factory=dict)
    budget: str | None = None


class LimitEntry(_Strict):
    """A limit as `POST /limits` takes it; subjects and `economy_id` by slug or id, users also by email."""

    subject_type: Literal["economy", "user", "room", "agent", "api_key"]
    subject_id: str = Field(min_length=1, max_length=320)
    economy_id: str | None = Field(default=None, min_length=1, max_length=200)
    metric: Literal["cost", "requests", "tokens"]
    window: Literal["minute", "hour", "day", "month", "total"]
    amount: str  # an integer string, as over the API (limits/config_sync.py checks it)
    allow_unpriced: bool = False


class AliasEntry(_Strict):
    """An alias written as a mapping, for the settings an alias may carry: `{target, cache}`."""

    target: str = Field(min_length=1)
    cache: CacheEntry | None = None


class GatewayConfig(_Strict):
    default_economy: str = "default"
    economies: tuple[EconomyEntry, ...] = ()
    limits: tuple[LimitEntry, ...] = ()
    models: tuple[ModelEntry, ...] = ()
    # `name: provider/model`, or `name: {target: provider/model, cache: {ttl_s}}`.
    aliases: dict[str, str | AliasEntry] = Field(default_factory=dict)
    default: tuple[str, ...] = ()
    deployment_credentials: tuple[DeploymentCredentialEntry, ...] = ()
    tools: tuple[str, ...] = ()
    routing: RoutingEntry = Field(default_factory=RoutingEntry)
    # `provider/model` or an alias → selectors tried after its own candidates (SPEC §14).
    fallbacks: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # Seed agents (issue: agents registry) are validated by the agents domain at start.
    agents: tuple[dict[str, Any], ...] = ()


def _line_of(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """Walk the composed YAML node tree along a pydantic error location."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


# libyaml's parser where PyYAML has it: a tenth of the pure-Python one's time, which every process
# loading its settings paid (a gateway, each CLI verb, each worker). Same safe constructor, same data.
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_FAST_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        pass
    try:  # a text libyaml refuses is read, or refused in its own words, as the pure-Python parser does
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None


def _nodes(text: str) -> yaml.Node | None:
    """The node tree, for a line number, only on the way out: composing it costs as much as the load."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def parse_config(text: str, source: str = "<config>") -> GatewayConfig:
    data = _load_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the config must be a mapping")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        line = _line_of(_nodes(text), loc)
        path = ".".join(str(p) for p in loc) or "(top level)"
        raise ConfigError(f"{source}:{line or '?'}: {path}: {first['msg']}") from None


def locate(path: Path | None, message: str) -> str:
    """Prefix a `dotted.path: problem` message with the file and line the path points at."""
    where, sep, rest = message.partition(": ")
    if path is None or not sep or not path.exists():
        return message
    loc = tuple(int(p) if p.isdigit() else p for p in where.split("."))
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return message
    return f"{path}:{_line_of(node, loc) or '?'}: {where}: {rest}"


def load_config(path: Path | None) -> GatewayConfig:
    if path is None or not path.exists():
        return GatewayConfig()
    return parse_config(path.read_text(encoding="utf-8"), str(path))
