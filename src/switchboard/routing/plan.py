"""The attempt plan (SPEC §14): a call's candidate models, each with every credential in reach for
its provider, balanced within a scope, cooling routes left out. The relay walks it in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from switchboard.catalog.catalog import Catalog
from switchboard.catalog.resolution import candidates
from switchboard.catalog.selectors import Selector
from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef
from switchboard.errors import BadRequest, NotFound
from switchboard.routing.health import RouteHealth
from switchboard.routing.request import ProviderPreferences
from switchboard.routing.route import PoolKey, Route


def candidate_models(
    catalog: Catalog, selectors: Sequence[Selector], preferences: ProviderPreferences | None = None
) -> Sequence[ModelEntry]:
    """The selectors' candidates in order (§6), then the catalog's fallbacks for what they named;
    each model once, filtered and ordered by the request's provider preferences."""
    if len(selectors) == 1 and not catalog.fallbacks and preferences is None:
        return candidates(catalog, selectors[0])  # an ordinary call
    found: dict[str, ModelEntry] = {}
    named: list[ModelEntry] = []
    for selector in selectors:
        for model in candidates(catalog, selector):
            found.setdefault(model.key, model)
            named.append(model)
    if catalog.fallbacks:
        extra: list[Selector] = []
        for selector in selectors:
            if selector.kind == "alias":  # an alias's fallbacks apply when the caller named the alias
                extra.extend(catalog.fallbacks.get(selector.alias or "", ()))
        for model in named:
            extra.extend(catalog.fallbacks.get(model.key, ()))
        for selector in extra:
            for model in candidates(catalog, selector):
                found.setdefault(model.key, model)
    models = list(found.values())
    if preferences is not None:
        models = _preferred(models, preferences)
        if not models:
            raise NotFound(
                f"No candidate for `{selectors[0].text}` is left once `provider` is applied",
                param="provider",
                openai_code="model_not_found",
            )
    return models


def _preferred(models: list[ModelEntry], preferences: ProviderPreferences) -> list[ModelEntry]:
    only, ignore, order = preferences.only, preferences.ignore, preferences.order
    if only is not None:
        models = [model for model in models if model.provider in only]
    if ignore:
        models = [model for model in models if model.provider not in ignore]
    if order:
        rank = {provider: index for index, provider in enumerate(order)}
        models.sort(key=lambda model: rank.get(model.provider, len(order)))  # stable: the rest keep theirs
    if not preferences.allow_fallbacks and models:
        first = order[0] if order else models[0].provider
        models = [model for model in models if model.provider == first]
    return models


def plan_routes(
    catalog: Catalog,
    selectors: Sequence[Selector],
    preferences: ProviderPreferences | None,
    reach: Mapping[str, Sequence[CredentialRef]],
    health: RouteHealth,
    scopes_searched: Sequence[str],
) -> list[Route]:
    """Every route in the order it will be tried; raises 400 `no_credential` when there is none.

    `reach` maps a provider to every credential the caller may spend for it, in scope order.
    """
    models = candidate_models(catalog, selectors, preferences)
    routes: list[Route] = []
    balanced: dict[PoolKey, list[CredentialRef]] = {}  # one turn per pool and call, whatever the models
    for model in models:
        refs = reach.get(model.provider)
        if not refs:
            continue  # a candidate without a credential is skipped, and is not an attempt
        settings = catalog.routing_for(model)
        if len(refs) == 1:
            routes.append(Route(model, refs[0], settings))
            continue
        start = 0
        while start < len(refs):  # one scope at a time: room's, own, deployment's
            scope = refs[start].scope
            end = start + 1
            while end < len(refs) and refs[end].scope == scope:
                end += 1
            if end - start == 1:
                routes.append(Route(model, refs[start], settings))
            else:
                pool = (model.provider, scope, refs[start].owner_id)
                order = balanced.get(pool)
                if order is None:
                    order = balanced[pool] = health.balanced(pool, refs[start:end])
                routes.extend(Route(model, ref, settings, pool) for ref in order)
            start = end
    if not routes:
        providers = ", ".join(dict.fromkeys(model.provider for model in models))
        raise BadRequest(
            f"No credential for provider(s) {providers} to serve `{selectors[0].text}` "
            f"(searched scopes: {', '.join(scopes_searched)}). Add one with POST /llm-credentials.",
            param="model",
            openai_code="no_credential",
        )
    return health.usable(routes)
