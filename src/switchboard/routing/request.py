"""A call's own routing fields (SPEC §14, as OpenRouter names them): `models` and `provider`.

Both are taken out of the body here: they steer the gateway and never reach the provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from switchboard.catalog.selectors import Selector, parse_selector
from switchboard.errors import BadRequest
from switchboard.upstream import providers

MAX_MODELS = 16
_PREFERENCE_KEYS = ("order", "only", "ignore", "allow_fallbacks")


@dataclass(frozen=True, slots=True)
class ProviderPreferences:
    """`provider: {order, only, ignore, allow_fallbacks}`; names are provider kinds."""

    order: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    allow_fallbacks: bool = True


def take_models(body: dict[str, Any]) -> list[Selector] | None:
    """The request's ordered `models` list, as selectors (of any form but `agent:`)."""
    raw = body.pop("models", None)
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or len(raw) > MAX_MODELS:
        raise BadRequest(f"`models` must be a list of 1 to {MAX_MODELS} model selectors", param="models")
    selectors = []
    for text in raw:
        try:
            selector = parse_selector(text)
        except BadRequest as exc:
            raise BadRequest(f"`models`: {exc.message}", param="models") from None
        if selector.kind == "agent":
            raise BadRequest("`models` cannot name an agent; put it in `model`", param="models")
        selectors.append(selector)
    return selectors


def _kinds(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadRequest(f"`provider.{name}` must be a list of provider kinds", param="provider")
    unknown = [item for item in value if not providers.is_known(item)]
    if unknown:
        raise BadRequest(
            f"`provider.{name}`: {', '.join(map(repr, unknown))} is not a provider kind", param="provider"
        )
    return tuple(value)


def take_preferences(body: dict[str, Any]) -> ProviderPreferences | None:
    raw = body.pop("provider", None)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BadRequest("`provider` must be an object", param="provider")
    unknown = [key for key in raw if key not in _PREFERENCE_KEYS]
    if unknown:
        raise BadRequest(
            f"`provider` does not take {', '.join(map(repr, unknown))} "
            f"(it takes {', '.join(_PREFERENCE_KEYS)})",
            param="provider",
        )
    allow = raw.get("allow_fallbacks", True)
    if not isinstance(allow, bool):
        raise BadRequest("`provider.allow_fallbacks` must be true or false", param="provider")
    return ProviderPreferences(
        order=_kinds(raw["order"], "order") if "order" in raw else (),
        only=_kinds(raw["only"], "only") if "only" in raw else None,
        ignore=_kinds(raw["ignore"], "ignore") if "ignore" in raw else (),
        allow_fallbacks=allow,
    )
