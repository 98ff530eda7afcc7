"""Resolution checks (SPEC §9): a well-formed spec that does not bind is 422 naming every failure."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.conftest import make_spec
from tests.agents.test_registry import nested_error
from tests.support.gateway import Gateway

UNRESOLVABLE: list[tuple[str, dict[str, Any], str]] = [
    ("empty skill name", {"skills": [{"name": " ", "prompt_addendum": "x"}]}, "skills.0.name"),
    (
        "duplicate skill name",
        {"skills": [{"name": "a", "prompt_addendum": "x"}, {"name": "a", "prompt_addendum": "y"}]},
        "skills.1.name",
    ),
    (
        "unknown tool in a list grant",
        {"skills": [{"name": "a", "prompt_addendum": "x", "tool_grants": ["teleport"]}]},
        "skills.0.tool_grants",
    ),
    (
        "unknown tool in an object grant",
        {"skills": [{"name": "a", "prompt_addendum": "x", "tool_grants": {"teleport": {}}}]},
        "skills.0.tool_grants",
    ),
    (
        "grant that is neither",
        {"skills": [{"name": "a", "prompt_addendum": "x", "tool_grants": 3}]},
        "skills.0.tool_grants",
    ),
    ("unknown tool in tools.allow", {"tools": {"allow": ["teleport"]}}, "tools.allow"),
    ("unknown tool in tools.deny", {"tools": {"deny": ["teleport"]}}, "tools.deny"),
    ("tools.allow not a list", {"tools": {"allow": "web_search"}}, "tools.allow"),
    ("unknown alias", {"model": {"kind": "alias", "alias": "no-such-alias"}}, "model"),
    ("tag no model carries", {"model": {"kind": "tagged", "tag": "no-such-tag"}}, "model"),
    ("tagged without a tag", {"model": {"kind": "tagged"}}, "model"),
    ("unknown provider", {"model": {"kind": "exact", "provider": "acme", "model": "m1"}}, "model"),
    ("exact without a model", {"model": {"kind": "exact", "provider": "openai"}}, "model"),
    ("pinned graph id not a uuid", {"pinned_kg_ids": [str(uuid.uuid4()), "graph-7"]}, "pinned_kg_ids.1"),
]


@pytest.mark.parametrize(("case", "change", "field"), UNRESOLVABLE, ids=[c[0] for c in UNRESOLVABLE])
def test_a_spec_that_does_not_resolve_is_422_naming_the_failure_and_is_not_stored(
    gateway: Gateway, case: str, change: dict[str, Any], field: str
) -> None:
    user = gateway.user()
    spec = make_spec(**change)
    for path in ("/agents", "/agents/validate"):
        error = nested_error(user.client.post(path, json=spec), 422, "VALIDATION_FAILED")
        assert field in [problem["field"] for problem in error["details"]["problems"]]
    nested_error(user.client.get(f"/agents/{spec['id']}"), 404, "NOT_FOUND")


def test_every_failure_of_a_spec_is_named_at_once(gateway: Gateway) -> None:
    spec = make_spec(
        skills=[{"name": "", "prompt_addendum": "x", "tool_grants": ["teleport"]}],
        tools={"allow": ["web_search"], "deny": ["levitate"]},
        model={"kind": "alias", "alias": "nope"},
        pinned_kg_ids=["x"],
    )
    error = nested_error(gateway.user().client.post("/agents", json=spec), 422, "VALIDATION_FAILED")
    assert [p["field"] for p in error["details"]["problems"]] == [
        "skills.0.name",
        "skills.0.tool_grants",
        "tools.deny",
        "model",
        "pinned_kg_ids.0",
    ]
    assert "teleport" in error["message"]


def test_validate_answers_what_a_valid_spec_resolves_to_without_storing_it(gateway: Gateway) -> None:
    user = gateway.user()
    graph = str(uuid.uuid4())
    spec = make_spec(
        skills=[
            {"name": "search", "prompt_addendum": "x", "tool_grants": {"web_search": {"max": 3}}},
            {"name": "run", "prompt_addendum": "y", "tool_grants": ["code_interpreter"]},
        ],
        tools={"allow": ["web_search"], "deny": ["code_interpreter"]},
        model={"kind": "tagged", "tag": "fast"},
        pinned_kg_ids=[graph],
    )
    response = user.client.post("/agents/validate", json=spec)
    assert response.status_code == 200
    assert response.json() == {
        "valid": True,
        "resolved": {
            "selector": "tag:fast",
            "models": ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"],
            "skills": ["search", "run"],
            "tools": ["web_search"],
            "pinned_kg_ids": [graph],
            "visibility": "user",
            "working_group_id": None,
            "economy_id": None,
        },
    }
    nested_error(user.client.get(f"/agents/{spec['id']}"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("model", "selector", "models"),
    [
        (None, "default", ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"]),
        ({"kind": "default"}, "default", ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"]),
        ({"kind": "alias", "alias": "claude"}, "claude", ["anthropic/claude-3-5-haiku-latest"]),
        (
            {"kind": "exact", "provider": "gemini", "model": "gemini-9-unlisted"},
            "gemini/gemini-9-unlisted",
            ["gemini/gemini-9-unlisted"],
        ),
    ],
)
def test_each_selector_form_resolves_in_the_catalog(
    gateway: Gateway, model: dict[str, Any] | None, selector: str, models: list[str]
) -> None:
    resolved = gateway.user().client.post("/agents/validate", json=make_spec(model=model)).json()["resolved"]
    assert (resolved["selector"], resolved["models"]) == (selector, models)


def test_validate_rejects_an_invalid_field_with_400_like_create(gateway: Gateway) -> None:
    nested_error(
        gateway.user().client.post("/agents/validate", json=make_spec(source="robot")),
        400,
        "VALIDATION_FAILED",
    )
