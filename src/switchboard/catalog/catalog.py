"""The catalog built once at start from the config file, indexed for the hot path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from switchboard.catalog.routing_config import fallback_selectors, routing_settings
from switchboard.catalog.routing_settings import DEFAULT_ROUTING, RoutingSettings
from switchboard.catalog.selectors import Selector, parse_selector, selector_from_spec
from switchboard.config_file import AliasEntry, ConfigError, GatewayConfig, ModelEntry
from switchboard.errors import BadRequest
from switchboard.upstream import providers


@dataclass(frozen=True)
class Catalog:
    models: tuple[ModelEntry, ...] = ()
    by_key: Mapping[str, ModelEntry] = field(default_factory=dict)
    by_tag: Mapping[str, tuple[ModelEntry, ...]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    default: tuple[str, ...] = ()
    tools: frozenset[str] = frozenset()
    # A model's bare name (`gpt-4o-mini`) → every catalog entry with that `model`, in catalog order.
    by_bare: Mapping[str, tuple[ModelEntry, ...]] = field(default_factory=dict)
    # Routing (SPEC §14): the catalog's settings, the models that override them, and `fallbacks:`.
    routing: RoutingSettings = DEFAULT_ROUTING
    routing_by_key: Mapping[str, RoutingSettings] = field(default_factory=dict)
    fallbacks: Mapping[str, tuple[Selector, ...]] = field(default_factory=dict)
    # SPEC §23: the response cache's TTL an alias sets (it wins over its target model's `cache`).
    alias_cache_ttl: Mapping[str, int] = field(default_factory=dict)

    def cache_ttl(self, selector: str, model: ModelEntry) -> int | None:
        """The TTL the catalog gives a call's answers: its alias's, else its model's; None: not cached."""
        ttl = self.alias_cache_ttl.get(selector) if self.alias_cache_ttl else None
        if ttl is not None:
            return ttl
        return model.cache.ttl_s if model.cache is not None else None

    def routing_for(self, model: ModelEntry) -> RoutingSettings:
        if not self.routing_by_key:
            return self.routing
        return self.routing_by_key.get(model.key, self.routing)

    def model_for(self, provider: str, model: str) -> ModelEntry:
        """A catalog entry, or an unlisted model of a known provider (priced elsewhere or not at all)."""
        return self.by_key.get(f"{provider}/{model}") or ModelEntry(provider=provider, model=model)

    def bare_match(self, name: str) -> ModelEntry | None:
        """The one catalog model named `name` without its provider; None when there is none.

        Clients such as litellm and the OpenAI Agents SDK strip their own `openai/` prefix before
        sending, so `openai/gpt-4o-mini` arrives as `gpt-4o-mini`.
        """
        found = self.by_bare.get(name, ())
        if len(found) > 1:
            raise BadRequest(
                f"The model `{name}` is ambiguous: it matches {', '.join(e.key for e in found)}; "
                "name one of them",
                param="model",
                openai_code="ambiguous_model",
            )
        return found[0] if found else None

    def unambiguous_bare_names(self) -> dict[str, ModelEntry]:
        return {name: entries[0] for name, entries in self.by_bare.items() if len(entries) == 1}

    def entry(self, key: str) -> ModelEntry:
        provider, _, model = key.partition("/")
        return self.model_for(provider, model)

    def validate_agent_selector(self, spec: dict[str, object] | None) -> list[str]:
        """Why an agent's model selector does not resolve in this catalog; empty when it does."""
        try:
            selector = selector_from_spec(spec)
        except BadRequest as exc:
            return [exc.message]
        if selector.kind == "tagged" and selector.tag not in self.by_tag:
            return [f"no catalog model carries tag {selector.tag!r}"]
        if selector.kind == "alias" and selector.alias not in self.aliases:
            return [f"unknown model alias {selector.alias!r}"]
        if selector.kind == "exact" and not providers.is_known(selector.provider or ""):
            return [f"unknown provider {selector.provider!r}"]
        if selector.kind == "default" and not self.default:
            return ["the catalog has no default models"]
        return []

    def selector_problem(self, selector: Selector) -> str | None:
        problems = self.validate_agent_selector(
            {
                "kind": selector.kind,
                "tag": selector.tag,
                "provider": selector.provider,
                "model": selector.model,
                "alias": selector.alias,
            }
        )
        return problems[0] if problems else None


def _check_key(key: str, where: str) -> None:
    provider, sep, model = key.partition("/")
    if not sep or not providers.is_known(provider) or not model:
        raise ConfigError(f"{where}: {key!r} is not <provider>/<model> with a provider GET /providers lists")


def build_catalog(config: GatewayConfig) -> Catalog:
    by_key: dict[str, ModelEntry] = {}
    by_tag: dict[str, list[ModelEntry]] = {}
    by_bare: dict[str, list[ModelEntry]] = {}
    for index, entry in enumerate(config.models):
        if entry.key in by_key:
            raise ConfigError(f"models.{index}: {entry.key} is listed twice")
        by_key[entry.key] = entry
        by_bare.setdefault(entry.model, []).append(entry)
        for tag in entry.tags:
            by_tag.setdefault(tag, []).append(entry)
    aliases: dict[str, str] = {}
    alias_cache_ttl: dict[str, int] = {}
    for alias, written in config.aliases.items():
        target = written.target if isinstance(written, AliasEntry) else written
        if isinstance(written, AliasEntry) and written.cache is not None:
            alias_cache_ttl[alias] = written.cache.ttl_s
        aliases[alias] = target
        _check_key(target, f"aliases.{alias}")
        if parse_selector(alias).kind != "alias":
            raise ConfigError(f"aliases.{alias}: an alias may not look like another selector form")
    for index, key in enumerate(config.default):
        _check_key(key, f"default.{index}")
    routing, routing_by_key = routing_settings(config)
    catalog = Catalog(
        models=config.models,
        by_key=by_key,
        by_tag={tag: tuple(entries) for tag, entries in by_tag.items()},
        aliases=aliases,
        default=config.default,
        tools=frozenset(config.tools),
        # An alias wins over a bare name; a bare name that is also a selector form is never one.
        by_bare={
            name: tuple(entries)
            for name, entries in by_bare.items()
            if name not in config.aliases and parse_selector(name).kind == "alias"
        },
        routing=routing,
        routing_by_key=routing_by_key,
        alias_cache_ttl=alias_cache_ttl,
    )
    if not config.fallbacks:
        return catalog
    # Checked against the catalog built so far: each fallback must name something that resolves.
    return replace(catalog, fallbacks=fallback_selectors(config, catalog.selector_problem))
