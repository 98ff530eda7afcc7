"""Resolution checks of SPEC §9: does a well-formed spec bind to skills, tools, a model and graphs?"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pydantic import JsonValue

from switchboard.agents.schemas import AgentSpec, ResolvedSpec
from switchboard.agents.visibility import tier_of
from switchboard.catalog.catalog import Catalog
from switchboard.errors import Unprocessable

Problem = dict[str, str]


@dataclass(frozen=True)
class ResolutionRules:
    """What a spec resolves against: the operator's catalog (models, aliases, tags, tools)."""

    catalog: Catalog

    def selector_problems(self, spec: AgentSpec) -> list[str]:
        # The catalog owns the selector rules, so /v1 and the registry cannot disagree.
        return self.catalog.validate_agent_selector(spec.model.model_dump() if spec.model else None)

    def candidates(self, spec: AgentSpec) -> list[str]:
        """Catalog models the selector may land on, in resolution order."""
        model = spec.model
        if model is None or model.kind == "default":
            return list(self.catalog.default)
        if model.kind == "tagged":
            return [entry.key for entry in self.catalog.by_tag.get(model.tag or "", ())]
        if model.kind == "alias":
            target = self.catalog.aliases.get(model.alias or "")
            return [target] if target else []
        return [f"{model.provider}/{model.model}"]


def selector_text(spec: AgentSpec) -> str:
    """The agent's selector in `/v1` grammar: `default`, `tag:<t>`, `<provider>/<model>` or the alias."""
    model = spec.model
    if model is None or model.kind == "default":
        return "default"
    if model.kind == "tagged":
        return f"tag:{model.tag}"
    if model.kind == "exact":
        return f"{model.provider}/{model.model}"
    return model.alias or ""


def _tool_names(value: JsonValue, field: str, problems: list[Problem]) -> list[str]:
    """Tool names from a grant: an object's keys or a list's strings."""
    if value is None:
        return []
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list):
        names: list[str] = []
        for index, item in enumerate(value):
            if isinstance(item, str):
                names.append(item)
            else:
                problems.append({"field": f"{field}.{index}", "problem": "a tool name must be a string"})
        return names
    problems.append({"field": field, "problem": "must be an object keyed by tool name or a list of names"})
    return []


def _check_tools(names: list[str], field: str, known: frozenset[str], problems: list[Problem]) -> None:
    for name in names:
        if name not in known:
            problems.append(
                {
                    "field": field,
                    "problem": f"unknown tool {name!r}; the catalog offers "
                    f"{', '.join(sorted(known)) or 'no tools'}",
                }
            )


def _skill_problems(spec: AgentSpec, known: frozenset[str], problems: list[Problem]) -> set[str]:
    granted: set[str] = set()
    seen: set[str] = set()
    for index, skill in enumerate(spec.skills):
        name = skill.name.strip()
        if not name:
            problems.append({"field": f"skills.{index}.name", "problem": "a skill name must not be empty"})
        elif name in seen:
            problems.append({"field": f"skills.{index}.name", "problem": f"skill {name!r} is declared twice"})
        seen.add(name)
        field = f"skills.{index}.tool_grants"
        names = _tool_names(skill.tool_grants, field, problems)
        _check_tools(names, field, known, problems)
        granted.update(names)
    return granted


def _tools_problems(
    spec: AgentSpec, known: frozenset[str], problems: list[Problem]
) -> tuple[set[str], set[str]]:
    tools = spec.tools
    if tools is None:
        return set(), set()
    if isinstance(tools, list):
        allowed = _tool_names(tools, "tools", problems)
        _check_tools(allowed, "tools", known, problems)
        return set(allowed), set()
    if not isinstance(tools, dict):
        problems.append({"field": "tools", "problem": "must be an object with `allow` and `deny` lists"})
        return set(), set()
    lists: dict[str, set[str]] = {}
    for key in ("allow", "deny"):
        value = tools.get(key)
        if value is not None and not isinstance(value, list):
            problems.append({"field": f"tools.{key}", "problem": "must be a list of tool names"})
            value = None
        names = _tool_names(value, f"tools.{key}", problems)
        _check_tools(names, f"tools.{key}", known, problems)
        lists[key] = set(names)
    return lists["allow"], lists["deny"]


def _graph_ids(spec: AgentSpec, problems: list[Problem]) -> list[uuid.UUID]:
    ids: list[uuid.UUID] = []
    for index, text in enumerate(spec.pinned_kg_ids):
        try:
            ids.append(uuid.UUID(text))
        except ValueError:
            problems.append({"field": f"pinned_kg_ids.{index}", "problem": "must be a UUID"})
    return ids


def resolve_spec(spec: AgentSpec, rules: ResolutionRules) -> ResolvedSpec:
    """The spec's bindings, or `Unprocessable` naming every failure in `details.problems`."""
    problems: list[Problem] = []
    known = rules.catalog.tools
    granted = _skill_problems(spec, known, problems)
    allowed, denied = _tools_problems(spec, known, problems)
    problems.extend({"field": "model", "problem": text} for text in rules.selector_problems(spec))
    graphs = _graph_ids(spec, problems)
    if problems:
        summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:3])
        raise Unprocessable(f"the agent spec does not resolve: {summary}", details={"problems": problems})
    return ResolvedSpec(
        selector=selector_text(spec),
        models=rules.candidates(spec),
        skills=[skill.name.strip() for skill in spec.skills],
        tools=sorted((granted | allowed) - denied),
        pinned_kg_ids=graphs,
        visibility=tier_of(spec),
        working_group_id=spec.working_group_id,
        economy_id=spec.economy_id,
    )
