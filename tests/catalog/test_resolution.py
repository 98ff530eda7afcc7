"""Resolution to (model, credential) in SPEC §6's candidate order, as one pure function."""

import pytest

from switchboard.catalog.catalog import build_catalog
from switchboard.catalog.resolution import resolve
from switchboard.catalog.selectors import parse_selector
from switchboard.config_file import ConfigError, GatewayConfig, parse_config
from switchboard.errors import BadRequest, NotFound

CONFIG = GatewayConfig.model_validate(
    {
        "models": [
            {"provider": "openai", "model": "gpt-4o-mini", "tags": ["fast", "cheap"]},
            {"provider": "anthropic", "model": "claude-3-5-haiku-latest", "tags": ["fast"]},
            {"provider": "gemini", "model": "gemini-2.0-flash", "tags": ["google"]},
        ],
        "aliases": {"quick": "anthropic/claude-3-5-haiku-latest"},
        "default": ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"],
    }
)
CATALOG = build_catalog(CONFIG)


def pick(selector: str, available: dict[str, str]) -> tuple[str, str]:
    resolution = resolve(CATALOG, parse_selector(selector), available)
    return resolution.model.key, resolution.credential


def test_default_takes_the_first_default_model_with_a_credential() -> None:
    assert pick("default", {"openai": "o", "anthropic": "a"}) == ("openai/gpt-4o-mini", "o")
    assert pick("default", {"anthropic": "a"}) == ("anthropic/claude-3-5-haiku-latest", "a")


def test_a_tag_walks_tagged_models_in_catalog_order() -> None:
    assert pick("tag:fast", {"anthropic": "a", "openai": "o"}) == ("openai/gpt-4o-mini", "o")
    assert pick("tag:fast", {"anthropic": "a"}) == ("anthropic/claude-3-5-haiku-latest", "a")


def test_an_alias_resolves_to_its_target() -> None:
    assert pick("quick", {"anthropic": "a"}) == ("anthropic/claude-3-5-haiku-latest", "a")


def test_an_exact_selector_may_name_a_model_the_catalog_does_not_list() -> None:
    key, credential = pick("openai/gpt-5-nano", {"openai": "o"})
    assert (key, credential) == ("openai/gpt-5-nano", "o")
    entry = resolve(CATALOG, parse_selector("openai/gpt-5-nano"), {"openai": "o"}).model
    assert entry.input_per_mtok is None


@pytest.mark.parametrize("selector", ["nonexistent", "tag:missing"])
def test_unknown_selectors_are_model_not_found(selector: str) -> None:
    with pytest.raises(NotFound) as caught:
        pick(selector, {"openai": "o"})
    assert caught.value.openai_code == "model_not_found"


def test_no_credential_names_the_providers_and_scopes_searched() -> None:
    with pytest.raises(BadRequest) as caught:
        resolve(CATALOG, parse_selector("tag:fast"), {"gemini": "g"}, ["room", "user", "deployment"])
    assert caught.value.openai_code == "no_credential"
    assert "openai, anthropic" in caught.value.message
    assert "room, user, deployment" in caught.value.message


def test_catalog_rejects_an_alias_to_an_unknown_provider() -> None:
    bad = GatewayConfig.model_validate({"aliases": {"x": "acme-ai/large"}})
    with pytest.raises(ConfigError, match=r"aliases\.x"):
        build_catalog(bad)


def test_a_bad_config_file_names_the_failing_line() -> None:
    text = "models:\n  - {provider: openai, model: a}\n  - {provider: nosuch, model: b}\n"
    with pytest.raises(ConfigError, match=r"<config>:3: models.1.provider"):
        parse_config(text)


def test_invalid_yaml_names_the_line() -> None:
    with pytest.raises(ConfigError, match=r"<config>:2: not valid YAML"):
        parse_config("a: 1\nb: @x\n")


def test_agent_selector_validation_lists_problems() -> None:
    assert CATALOG.validate_agent_selector({"kind": "tagged", "tag": "fast"}) == []
    assert CATALOG.validate_agent_selector({"kind": "alias", "alias": "nope"}) == [
        "unknown model alias 'nope'"
    ]
    assert CATALOG.validate_agent_selector({"kind": "tagged", "tag": "zzz"})
    assert CATALOG.validate_agent_selector({"kind": "exact", "provider": "acme-ai", "model": "m"})
    assert CATALOG.validate_agent_selector({"kind": "exact", "provider": "mistral", "model": "m"}) == []
