"""The attempt plan (routing/plan.py), without a gateway: candidates, fallbacks, provider preferences."""

from __future__ import annotations

import uuid

import pytest

from switchboard.catalog.catalog import build_catalog
from switchboard.catalog.selectors import parse_selector
from switchboard.config_file import parse_config
from switchboard.credentials.store import CredentialRef
from switchboard.errors import BadRequest, NotFound
from switchboard.routing.health import RouteHealth
from switchboard.routing.plan import candidate_models, plan_routes
from switchboard.routing.request import ProviderPreferences

CATALOG = build_catalog(
    parse_config(
        """
models:
  - {provider: openai, model: gpt-4o, tags: [smart]}
  - {provider: openai, model: gpt-4o-mini, tags: [fast]}
  - {provider: anthropic, model: claude-sonnet-4, tags: [smart]}
  - {provider: gemini, model: gemini-2.0-flash, tags: [fast]}
aliases: {best: openai/gpt-4o}
default: [openai/gpt-4o-mini, gemini/gemini-2.0-flash]
fallbacks:
  openai/gpt-4o: [anthropic/claude-sonnet-4, tag:fast]
  best: [gemini/gemini-2.0-flash]
"""
    )
)


def keys(*selectors: str, preferences: ProviderPreferences | None = None) -> list[str]:
    parsed = [parse_selector(text) for text in selectors]
    return [model.key for model in candidate_models(CATALOG, parsed, preferences)]


def ref(provider: str, scope: str = "user", owner: uuid.UUID | None = None) -> CredentialRef:
    return CredentialRef(id=uuid.uuid4(), scope=scope, provider=provider, base_url=None, owner_id=owner)  # type: ignore[arg-type]


def test_a_models_fallbacks_follow_its_candidates_each_model_once() -> None:
    assert keys("openai/gpt-4o") == [
        "openai/gpt-4o",
        "anthropic/claude-sonnet-4",
        "openai/gpt-4o-mini",
        "gemini/gemini-2.0-flash",
    ]


def test_an_aliases_fallbacks_come_before_its_targets() -> None:
    assert keys("best")[:3] == ["openai/gpt-4o", "gemini/gemini-2.0-flash", "anthropic/claude-sonnet-4"]


def test_the_requests_own_list_comes_before_the_catalogs_fallbacks() -> None:
    assert keys("openai/gpt-4o", "tag:fast")[:3] == [
        "openai/gpt-4o",
        "openai/gpt-4o-mini",
        "gemini/gemini-2.0-flash",
    ]


@pytest.mark.parametrize(
    ("preferences", "expected"),
    [
        (ProviderPreferences(order=("gemini", "anthropic")), ["gemini", "anthropic", "openai", "openai"]),
        (ProviderPreferences(only=("openai",)), ["openai", "openai"]),
        (ProviderPreferences(ignore=("openai",)), ["anthropic", "gemini"]),
        (ProviderPreferences(allow_fallbacks=False), ["openai", "openai"]),
        (ProviderPreferences(order=("anthropic",), allow_fallbacks=False), ["anthropic"]),
    ],
)
def test_provider_preferences_filter_and_order_by_provider_kind(
    preferences: ProviderPreferences, expected: list[str]
) -> None:
    assert [key.split("/")[0] for key in keys("openai/gpt-4o", preferences=preferences)] == expected


def test_every_credential_is_a_route_in_scope_order_balanced_within_a_scope() -> None:
    room = uuid.uuid4()
    room_keys = [ref("openai", "room", room), ref("openai", "room", room)]
    own = ref("openai")
    health = RouteHealth()
    reach = {"openai": [*room_keys, own]}
    plans = [
        [
            route.credential
            for route in plan_routes(CATALOG, [parse_selector("openai/gpt-4o-mini")], None, reach, health, ())
        ]
        for _ in range(2)
    ]
    assert [plan[2] for plan in plans] == [own, own]  # the caller's own key after the room's
    assert {plan[0].id for plan in plans} == {key.id for key in room_keys}  # the room's keys take turns


def test_no_credential_for_any_candidate_is_400_naming_the_providers() -> None:
    with pytest.raises(BadRequest, match="openai, anthropic, gemini") as raised:
        plan_routes(CATALOG, [parse_selector("tag:smart")], None, {}, RouteHealth(), ("user",))
    assert raised.value.openai_code == "no_credential"


def test_preferences_that_leave_nothing_are_404() -> None:
    with pytest.raises(NotFound):
        keys("openai/gpt-4o", preferences=ProviderPreferences(only=("azure",)))
