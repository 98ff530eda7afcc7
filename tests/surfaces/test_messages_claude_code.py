"""Claude Code headless (`claude -p`) with ANTHROPIC_BASE_URL pointed at the gateway (SPEC §16): relayed
to an `anthropic` credential and translated to an `openai` one, with no internet."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import default_test_config
from tests.fakes import anthropic_wire
from tests.fakes.openai_wire import sse
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.support.gateway import Gateway

CLAUDE = shutil.which("claude")
pytestmark = pytest.mark.skipif(
    CLAUDE is None, reason="Claude Code is not on PATH (scripts/test installs it into .venv/claude with npm)"
)
ANSWER = "Hello from behind the gateway."


def openai_text(model: str) -> tuple[dict[str, Any], list[bytes]]:
    """A plain text answer in OpenAI's format, whole and streamed (Claude Code sends tools, and the
    fake provider would otherwise answer with a tool call)."""
    head = {"id": "chatcmpl-cc", "object": "chat.completion.chunk", "created": 1, "model": model}
    usage = {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
    events = [
        sse({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]}),
        sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        sse({**head, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]
    message = {"role": "assistant", "content": ANSWER}
    whole = {
        **head,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }
    return whole, events


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_claude_code_answers_through_the_gateway(
    kind: str, make_gateway: Any, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    gateway: Gateway = make_gateway(default_test_config(fake_provider.base_url))
    user = gateway.user()
    add_credential(user, kind, provider_base(fake_provider, kind))
    model = unique_model("cc")
    if kind == "anthropic":
        answer = anthropic_wire.message([anthropic_wire.text(ANSWER)], model=model)
        fake_provider.script(model, answer=answer, answer_events=anthropic_wire.stream_of(answer))
    else:
        whole, events = openai_text(model)
        fake_provider.script(model, answer=whole, answer_events=events)
    selector = f"{kind}/{model}"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": user.token,  # sent as x-api-key
        "ANTHROPIC_SMALL_FAST_MODEL": selector,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": selector,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    assert CLAUDE is not None
    done = subprocess.run(
        [CLAUDE, "-p", "say hello", "--model", selector],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert ANSWER in done.stdout
    seen = fake_provider.received(model)
    assert seen and all(r.api_key != user.token for r in seen)
    records = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    assert {r["endpoint"] for r in records if r["model"] == model} == {"messages"}
