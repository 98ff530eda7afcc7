"""The catalog's routing config checked at start: `routing:` per model, and `fallbacks:`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from switchboard.catalog.routing_settings import DEFAULT_ROUTING, RoutingSettings
from switchboard.catalog.selectors import Selector, parse_selector
from switchboard.config_file import ConfigError, GatewayConfig
from switchboard.errors import BadRequest


def routing_settings(config: GatewayConfig) -> tuple[RoutingSettings, dict[str, RoutingSettings]]:
    """The catalog-wide settings, and those of the models that carry their own `routing:`."""
    base = DEFAULT_ROUTING.merged(config.routing)
    own = {entry.key: base.merged(entry.routing) for entry in config.models if entry.routing is not None}
    return base, own


def fallback_selectors(
    config: GatewayConfig, problem_of: Callable[[Selector], str | None]
) -> Mapping[str, tuple[Selector, ...]]:
    """`fallbacks:` keys (`provider/model` or an alias) → their selectors, each known to resolve."""
    found: dict[str, tuple[Selector, ...]] = {}
    for key, texts in config.fallbacks.items():
        where = f"fallbacks.{key}"
        named = parse_selector_or_fail(key, where)
        if named.kind == "alias" and key not in config.aliases:
            raise ConfigError(f"{where}: {key!r} is neither <provider>/<model> nor an alias of the catalog")
        if named.kind not in ("exact", "alias"):
            raise ConfigError(f"{where}: fallbacks are keyed by <provider>/<model> or an alias")
        selectors = []
        for index, text in enumerate(texts):
            selector = parse_selector_or_fail(text, f"{where}.{index}")
            problem = "an agent cannot be a fallback" if selector.kind == "agent" else problem_of(selector)
            if problem:
                raise ConfigError(f"{where}.{index}: {problem}")
            selectors.append(selector)
        found[key] = tuple(selectors)
    return found


def parse_selector_or_fail(text: str, where: str) -> Selector:
    try:
        return parse_selector(text)
    except BadRequest as exc:
        raise ConfigError(f"{where}: {exc.message}") from None
