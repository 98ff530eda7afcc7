"""An Idempotency-Key retry replays the first answer even when the caller's state changed since."""

from __future__ import annotations

import uuid
from typing import Any

from tests.llm.conftest import Caller, unique_model


def test_a_retry_replays_even_after_the_credential_was_removed(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    key = str(uuid.uuid4())
    body = {"model": f"openai/{model}", "messages": [{"role": "user", "content": "hi"}]}
    first = caller.user.client.post("/v1/chat/completions", json=body, headers={"idempotency-key": key})
    assert first.status_code == 200
    removed = caller.user.client.delete(f"/llm-credentials/{caller.credential_ids['openai']}")
    assert removed.status_code == 204
    again = caller.user.client.post("/v1/chat/completions", json=body, headers={"idempotency-key": key})
    assert again.status_code == 200
    assert again.content == first.content
    assert len(fake_provider.received(model)) == 1


def test_a_call_refused_before_it_ran_does_not_hold_its_key(caller: Caller, fake_provider: Any) -> None:
    key = str(uuid.uuid4())
    body = {"model": "no-such-alias", "messages": [{"role": "user", "content": "hi"}]}
    refused = caller.user.client.post("/v1/chat/completions", json=body, headers={"idempotency-key": key})
    assert refused.status_code == 404
    again = caller.user.client.post("/v1/chat/completions", json=body, headers={"idempotency-key": key})
    assert again.status_code == 404  # ran again (not 409 in-flight, not a stored replay)
