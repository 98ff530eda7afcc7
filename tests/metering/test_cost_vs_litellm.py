"""The record's cost against the pinned litellm's own cost function (SPEC §20).

For each native provider a corpus of provider usage objects, generated deterministically (plain, cache
reads, 5-minute and one-hour writes, above 200k, service tiers, reasoning), is read by the gateway's
one reader for that provider and priced from litellm's map (the source a model the catalog leaves out
takes), and read by litellm's own translation of the same answer and priced by `litellm.cost_per_token`.
The two agree to within 1 nano-unit (litellm computes in floats, the gateway exactly): no case of the
corpus differs, so none is listed. Batch answers (Anthropic's `service_tier: batch`) are priced by
litellm's batch path (`batch_cost_calculator`), as litellm prices them: one-hour writes at the batch
cache-write price, since the map has no batch price for them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from switchboard.metering.pricing import compute_cost, litellm_lookup
from switchboard.upstream.adapters.anthropic_usage import usage as anthropic_usage
from switchboard.upstream.adapters.gemini_answer import usage_of as gemini_usage
from switchboard.upstream.litellm_loader import load_litellm
from switchboard.upstream.types import Usage
from switchboard.upstream.usage_openai import openai_usage

PER_PROVIDER = 120
MODELS = {
    "openai": ("gpt-4o-mini", "gpt-4o", "gpt-5", "o3-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "claude-sonnet-4-6"),
    "gemini": ("gemini-2.5-pro", "gemini-2.5-flash"),
}
TIERS = {
    "openai": (None, "default", "flex", "priority"),
    "anthropic": (None, "standard", "batch"),
    "gemini": (None,),
}


@dataclass(frozen=True)
class Case:
    provider: str
    model: str
    raw: dict[str, Any]  # the provider's usage (Gemini: usageMetadata) as it comes on the wire
    service_tier: str | None

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}:{self.raw}:{self.service_tier}"


def _prompt(rng: random.Random) -> int:
    # About one in five above the long-context threshold, the rest small to large.
    return rng.choice(
        [rng.randrange(1, 2_000), rng.randrange(2_000, 150_000), rng.randrange(200_001, 900_000)]
    )


def _openai(rng: random.Random, model: str) -> Case:
    prompt = _prompt(rng)
    cached = rng.choice([0, 0, rng.randrange(0, prompt + 1)])
    completion = rng.randrange(0, 20_000)
    reasoning = rng.choice([0, rng.randrange(0, completion + 1)])
    raw = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    return Case("openai", model, raw, rng.choice(TIERS["openai"]))


def _anthropic(rng: random.Random, model: str) -> Case:
    prompt = _prompt(rng)
    read = rng.choice([0, rng.randrange(0, prompt + 1)])
    written = rng.choice([0, rng.randrange(0, prompt - read + 1)])
    written_1h = rng.choice([0, written, rng.randrange(0, written + 1)])
    raw: dict[str, Any] = {
        "input_tokens": prompt - read - written,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "cache_creation": {
            "ephemeral_5m_input_tokens": written - written_1h,
            "ephemeral_1h_input_tokens": written_1h,
        },
        "output_tokens": rng.randrange(1, 20_000),
    }
    tier = rng.choice(TIERS["anthropic"])
    if tier is not None:
        raw["service_tier"] = tier
    return Case("anthropic", model, raw, tier)


def _gemini(rng: random.Random, model: str) -> Case:
    prompt = _prompt(rng)
    candidates = rng.randrange(1, 10_000)
    thoughts = rng.choice([0, rng.randrange(1, 10_000)])
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    cached = rng.choice([0, rng.randrange(1, prompt + 1)])
    if cached:
        meta["cachedContentTokenCount"] = cached
    return Case("gemini", model, meta, None)


BUILDERS: dict[str, Callable[[random.Random, str], Case]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def corpus() -> list[Case]:
    cases = []
    for provider, builder in BUILDERS.items():
        rng = random.Random(f"billing-{provider}")
        models = MODELS[provider]
        cases.extend(builder(rng, models[index % len(models)]) for index in range(PER_PROVIDER))
    return cases


CORPUS = corpus()


def ours(case: Case) -> int:
    """The gateway's reader, then its price for the model from litellm's map."""
    usage: Usage | None
    if case.provider == "openai":
        usage = openai_usage(case.raw, case.service_tier)
    elif case.provider == "anthropic":
        usage = anthropic_usage(case.raw, None)
    else:
        usage = gemini_usage(case.raw)
    assert usage is not None
    tier = usage.service_tier if usage.service_tier in ("flex", "priority", "batch") else None
    cost = compute_cost(litellm_lookup(case.provider, case.model, tier), usage, 0)
    assert cost.priced, case
    return cost.nanos


def theirs(case: Case) -> int:
    """litellm's translation of the same usage, priced by litellm's own cost function."""
    litellm: Any = load_litellm()
    if case.provider == "openai":
        usage = litellm.Usage(**case.raw)
    elif case.provider == "anthropic":
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        usage = AnthropicConfig().calculate_usage(case.raw, None)
    else:
        from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import VertexGeminiConfig

        usage = VertexGeminiConfig.calculate_usage({"usageMetadata": case.raw})  # type: ignore[arg-type, typeddict-item]
    if case.service_tier == "batch":  # litellm prices a batch's answers on a path of their own
        from litellm.cost_calculator import batch_cost_calculator

        prompt_cost, completion_cost = batch_cost_calculator(usage, case.model, case.provider)
        return round((prompt_cost + completion_cost) * 1e9)
    prompt_cost, completion_cost = litellm.cost_per_token(
        model=case.model,
        custom_llm_provider=case.provider,
        usage_object=usage,
        service_tier=case.service_tier,
    )
    return round((prompt_cost + completion_cost) * 1e9)


def test_the_corpus_covers_every_class_for_every_native_provider() -> None:
    for provider in BUILDERS:
        cases = [case for case in CORPUS if case.provider == provider]
        assert len(cases) >= 100
        usages = [ours_usage(case) for case in cases]
        assert any(u.prompt_tokens > 200_000 for u in usages)
        assert any(u.prompt_tokens <= 200_000 for u in usages)
        assert any(u.cached_tokens for u in usages)
        assert any(u.reasoning_tokens for u in usages) or provider == "anthropic"
        if provider == "anthropic":
            assert any(u.cache_write_tokens > u.cache_write_1h_tokens for u in usages)
            assert any(u.cache_write_1h_tokens for u in usages)
        if provider == "openai":
            assert {"flex", "priority"} <= {u.service_tier for u in usages}
        if provider == "anthropic":
            assert "batch" in {u.service_tier for u in usages}


def ours_usage(case: Case) -> Usage:
    if case.provider == "openai":
        return openai_usage(case.raw, case.service_tier)
    if case.provider == "anthropic":
        return anthropic_usage(case.raw, None)
    found = gemini_usage(case.raw)
    assert found is not None
    return found


@pytest.mark.parametrize("provider", list(BUILDERS))
def test_the_record_cost_equals_litellms_within_a_nano_unit(provider: str) -> None:
    differing = []
    for case in (case for case in CORPUS if case.provider == provider):
        mine, reference = ours(case), theirs(case)
        if abs(mine - reference) > 1:
            differing.append((case.name, mine, reference))
    assert differing == []
