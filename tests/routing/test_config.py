"""The catalog's `routing:` and `fallbacks:` (SPEC §14), checked at start with the line that is wrong."""

from __future__ import annotations

import pytest

from switchboard.catalog.catalog import build_catalog
from switchboard.catalog.routing_settings import RoutingSettings
from switchboard.catalog.selectors import parse_selector
from switchboard.config_file import ConfigError, parse_config

BASE = """
models:
  - {provider: openai, model: gpt-4o-mini, tags: [fast]}
  - {provider: openai, model: gpt-4o, routing: {retries: 3, first_byte_timeout_s: 20}}
  - {provider: anthropic, model: claude-sonnet-4, tags: [fast]}
aliases:
  smart: openai/gpt-4o
"""


def test_without_routing_the_spec_defaults_apply() -> None:
    catalog = build_catalog(parse_config(BASE))
    mini = catalog.entry("openai/gpt-4o-mini")
    assert catalog.routing_for(mini) == RoutingSettings(
        retries=1, cooldown_s=30, first_byte_timeout_s=60, connect_timeout_s=5
    )


def test_a_models_own_routing_overrides_the_catalogs_key_by_key() -> None:
    catalog = build_catalog(parse_config(BASE + "routing: {retries: 0, cooldown_s: 10}\n"))
    assert catalog.routing_for(catalog.entry("openai/gpt-4o")) == RoutingSettings(
        retries=3, cooldown_s=10, first_byte_timeout_s=20, connect_timeout_s=5
    )
    assert catalog.routing_for(catalog.entry("openai/gpt-4o-mini")).retries == 0
    # An exact model the catalog does not list takes the catalog's settings.
    assert catalog.routing_for(catalog.entry("openai/o3")).cooldown_s == 10


def test_fallbacks_map_a_model_or_an_alias_to_selectors() -> None:
    text = (
        BASE + 'fallbacks: {"openai/gpt-4o": ["anthropic/claude-sonnet-4", "tag:fast"], smart: [default]}\n'
    )
    text += "default: [openai/gpt-4o-mini]\n"
    catalog = build_catalog(parse_config(text))
    assert catalog.fallbacks["openai/gpt-4o"] == (
        parse_selector("anthropic/claude-sonnet-4"),
        parse_selector("tag:fast"),
    )
    assert catalog.fallbacks["smart"] == (parse_selector("default"),)


@pytest.mark.parametrize(
    ("fallbacks", "problem"),
    [
        ('{"openai/gpt-4o": ["tag:nothing"]}', "no catalog model carries tag 'nothing'"),
        ('{"openai/gpt-4o": ["unknown-alias"]}', "unknown model alias"),
        ('{"openai/gpt-4o": ["agent:helper"]}', "an agent cannot be a fallback"),
        ('{"not-an-alias": ["openai/gpt-4o"]}', "neither <provider>/<model> nor an alias"),
        ('{"tag:fast": ["openai/gpt-4o"]}', "keyed by <provider>/<model> or an alias"),
    ],
)
def test_a_fallback_that_does_not_resolve_is_a_start_up_error(fallbacks: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        build_catalog(parse_config(BASE + f"fallbacks: {fallbacks}\n"))


@pytest.mark.parametrize(
    "routing", ["{retries: -1}", "{cooldown_s: 0}", "{first_byte_timeout_s: fast}", "{retry: 2}"]
)
def test_bad_routing_settings_name_the_line(routing: str) -> None:
    with pytest.raises(ConfigError, match=r"<config>:\d+: routing"):
        parse_config(BASE + f"routing: {routing}\n")
