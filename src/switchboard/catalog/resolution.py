"""Resolves a selector to the first candidate model the caller holds a credential for (SPEC §6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from switchboard.catalog.catalog import Catalog
from switchboard.catalog.selectors import Selector
from switchboard.config_file import ModelEntry
from switchboard.errors import BadRequest, NotFound

C = TypeVar("C")


@dataclass(frozen=True)
class Resolution(Generic[C]):
    model: ModelEntry
    credential: C


def candidates(catalog: Catalog, selector: Selector) -> Sequence[ModelEntry]:
    """Candidate models in the order SPEC §6 gives; NotFound(model_not_found) when there are none."""
    if selector.kind == "default":
        found: Sequence[ModelEntry] = [catalog.entry(key) for key in catalog.default]
    elif selector.kind == "tagged":
        found = catalog.by_tag.get(selector.tag or "", ())
    elif selector.kind == "exact":
        found = [catalog.model_for(selector.provider or "", selector.model or "")]
    elif selector.kind == "alias":
        target = catalog.aliases.get(selector.alias or "")
        if target:
            found = [catalog.entry(target)]
        else:
            bare = catalog.bare_match(selector.alias or "")
            found = [bare] if bare is not None else []
    else:
        found = []
    if not found:
        raise NotFound(
            f"The model `{selector.text}` does not exist", param="model", openai_code="model_not_found"
        )
    return found


def resolve(
    catalog: Catalog,
    selector: Selector,
    available: Mapping[str, C],
    scopes_searched: Sequence[str] = ("user", "deployment"),
) -> Resolution[C]:
    """Pure: `available` maps provider → the credential the caller may spend for it."""
    models = candidates(catalog, selector)
    for model in models:
        credential = available.get(model.provider)
        if credential is not None:
            return Resolution(model=model, credential=credential)
    providers = ", ".join(dict.fromkeys(m.provider for m in models))
    raise BadRequest(
        f"No credential for provider(s) {providers} to serve `{selector.text}` "
        f"(searched scopes: {', '.join(scopes_searched)}). Add one with POST /llm-credentials.",
        param="model",
        openai_code="no_credential",
    )
