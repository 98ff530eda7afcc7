"""Parses the `model` string of a /v1 call into a selector (SPEC §5 grammar)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from switchboard.errors import BadRequest
from switchboard.upstream import providers

SelectorKind = Literal["default", "tagged", "exact", "alias", "agent"]
MAX_SELECTOR_LENGTH = 256
# Control characters (C0, DEL, C1) and anything outside Latin-1: such a name is no model's, would
# break the provider request line or the response's x-switchboard-model header, and is refused first.
_UNUSABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]|[^\x00-\xff]")


@dataclass(frozen=True)
class Selector:
    kind: SelectorKind
    text: str
    tag: str | None = None
    provider: str | None = None
    model: str | None = None
    alias: str | None = None
    agent_id: str | None = None


def parse_selector(text: object) -> Selector:
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("`model` must be a non-empty string", param="model")
    if len(text) > MAX_SELECTOR_LENGTH:
        raise BadRequest(f"`model` is longer than {MAX_SELECTOR_LENGTH} characters", param="model")
    if _UNUSABLE.search(text):
        raise BadRequest("`model` contains a control character or a character outside Latin-1", param="model")
    if text == "default":
        return Selector(kind="default", text=text)
    if text.startswith("tag:"):
        tag = text[4:]
        if not tag:
            raise BadRequest("`tag:` needs a tag name", param="model")
        return Selector(kind="tagged", text=text, tag=tag)
    if text.startswith("agent:"):
        agent_id = text[6:]
        if not agent_id:
            raise BadRequest("`agent:` needs an agent id", param="model")
        return Selector(kind="agent", text=text, agent_id=agent_id)
    provider, sep, model = text.partition("/")
    if sep and model and providers.is_known(provider):
        return Selector(kind="exact", text=text, provider=provider, model=model)
    return Selector(kind="alias", text=text, alias=text)


def selector_from_spec(spec: dict[str, object] | None) -> Selector:
    """An agent spec's `model` object ({kind: default|tagged|exact|alias, ...}) as a selector."""
    if not spec:
        return Selector(kind="default", text="default")
    kind = spec.get("kind")
    if kind == "default":
        return Selector(kind="default", text="default")
    if kind == "tagged" and isinstance(spec.get("tag"), str) and spec["tag"]:
        return Selector(kind="tagged", text=f"tag:{spec['tag']}", tag=str(spec["tag"]))
    if kind == "exact" and isinstance(spec.get("provider"), str) and isinstance(spec.get("model"), str):
        provider, model = str(spec["provider"]), str(spec["model"])
        return Selector(kind="exact", text=f"{provider}/{model}", provider=provider, model=model)
    if kind == "alias" and isinstance(spec.get("alias"), str) and spec["alias"]:
        return Selector(kind="alias", text=str(spec["alias"]), alias=str(spec["alias"]))
    raise BadRequest("model selector is incomplete for its kind", param="model")
