"""Client libraries whose default is the Responses API, pointed at the gateway as the README says:
the OpenAI Agents SDK (its default model settings) and pydantic-ai's `openai:` models."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from tests.fakes import anthropic_wire
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import Caller, unique_model
from tests.support.gateway import Gateway

CLAUDE = "claude-3-5-haiku-latest"  # the shared catalog's `claude` alias
# The two libraries are imported by their tests: together over a second of CPU, which every xdist
# worker would otherwise spend collecting this file, for the one worker that runs it.


@pytest.fixture
def openai_env(gateway: Gateway, caller: Caller, monkeypatch: pytest.MonkeyPatch) -> None:
    """What both libraries read when given no client: the gateway's /v1 and a Switchboard token."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{gateway.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", caller.user.token)


def test_the_openai_agents_sdk_runs_a_tool_using_agent_and_streams_on_a_translated_model(
    openai_env: None, caller: Caller, fake_provider: FakeProvider
) -> None:
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # traces would go to OpenAI's platform, which a gateway token cannot reach
    asked: list[str] = []

    @function_tool
    def get_weather(location: str) -> str:
        """The weather in a city."""
        asked.append(location)
        return "sunny, 24 C"

    before = len(fake_provider.received(CLAUDE))
    fake_provider.enqueue(CLAUDE, tool_arguments='{"location": "Paris"}')  # the model calls the tool
    fake_provider.enqueue(CLAUDE, answer=anthropic_wire.message([anthropic_wire.text("Sunny in Paris.")]))
    fake_provider.enqueue(CLAUDE, reply="Streamed through the gateway.")
    weather = Agent(name="Weather", instructions="Answer briefly.", model="claude", tools=[get_weather])
    chatty = Agent(name="Streamer", instructions="Answer.", model="claude")

    async def runs() -> tuple[Any, Any, list[str]]:
        # One event loop for both: the Agents SDK shares one HTTP client across runs.
        ran = await Runner.run(weather, "What is the weather in Paris?")
        streamed = Runner.run_streamed(chatty, "Say something.")
        kinds = [event.type async for event in streamed.stream_events()]
        return ran.final_output, streamed.final_output, kinds

    ran, streamed, kinds = asyncio.run(runs())
    assert ran == "Sunny in Paris."
    assert asked == ["Paris"]
    assert streamed == "Streamed through the gateway."
    assert "raw_response_event" in kinds
    first, second, third = fake_provider.received(CLAUDE)[before:]
    assert {first.path, second.path, third.path} == {"/v1/messages"}  # Anthropic behind the Responses API
    assert "sunny, 24 C" in orjson.dumps(second.body).decode()
    assert third.stream
    records = caller.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    assert [r["endpoint"] for r in records if r["model"] == CLAUDE] == ["responses"] * 3


class City(BaseModel):
    city: str
    population: int


def test_pydantic_ai_openai_models_use_the_responses_api_with_structured_output(
    openai_env: None, caller: Caller, fake_provider: FakeProvider
) -> None:
    from pydantic_ai import Agent as PydanticAgent

    model = unique_model("pyd")
    fake_provider.script(
        model, reply="Paris it is.", tool_arguments='{"city": "Paris", "population": 2100000}'
    )
    plain = PydanticAgent(f"openai:gemini/{model}", instructions="Be brief.")
    assert plain.run_sync("Capital of France?").output == "Paris it is."
    structured = PydanticAgent(f"openai:gemini/{model}", output_type=City)
    assert structured.run_sync("Largest French city?").output == City(city="Paris", population=2100000)
    requests = fake_provider.received(model)
    assert len(requests) == 2 and all(r.path.endswith(":generateContent") for r in requests)
    records = caller.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    assert [r["endpoint"] for r in records if r["model"] == model] == ["responses", "responses"]
