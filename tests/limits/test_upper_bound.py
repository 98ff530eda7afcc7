"""A reservation never holds less than a provider can bill, at a limit's end, on several processes (SPEC §13).

The limit is in the config file, so every process applies it from its first call. The fake provider
holds each admitted call until the test releases it: which calls are admitted never depends on timing.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.limits.test_replicas import (
    ACTUAL,
    HOLD,
    limit_status,
    priced_config,
    replicas,
    tokens,
    wave,
)
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER, tls_context

CJK = [{"role": "user", "content": "漢" * 2000}]
CJK_CAP = 10
# What the fake provider bills a CJK call at most (a token a character, 3 for the message, 1 for
# "user"; the whole cap answered): the call's worst case.
CJK_WORST = (2000 + 3 + 1) * 150 + CJK_CAP * 600


def limited_config(fake_provider: Any, models: list[str], amount: int) -> dict[str, Any]:
    config = priced_config(fake_provider, models)
    config["limits"] = [
        {
            "subject_type": "economy",
            "subject_id": "default",
            "metric": "cost",
            "window": "total",
            "amount": str(amount),
        }
    ]
    return config


def caller_on(urls: list[str], fake_provider: Any) -> tuple[str, str, str]:
    """A user with an OpenAI key to the fake provider, an Admin, and the config limit's id."""
    user, admin = tokens()
    secret = RECORDER.remember_secret(f"sk-limits-{uuid.uuid4().hex}")
    created = httpx.post(
        f"{urls[0]}/llm-credentials",
        headers={"authorization": f"Bearer {user}"},
        json={"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"},
        verify=tls_context(),
    )
    assert created.status_code == 201, created.text
    listed = httpx.get(
        f"{urls[0]}/limits",
        params={"subject_type": "economy"},
        headers={"authorization": f"Bearer {admin}"},
        verify=tls_context(),
    )
    assert listed.status_code == 200, listed.text
    [limit] = listed.json()["data"]
    return user, admin, str(limit["id"])


def test_fifty_concurrent_cjk_calls_settle_within_the_amount(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """Issue 32's reproduction: at four characters a token, 50 concurrent calls of 2,000 CJK characters
    were each reserved a quarter of what the provider billed, and settled 340 % of the amount."""
    model = f"cjk-{uuid.uuid4().hex[:8]}"
    fake_provider.script(model, held=True, count_prompt=True, completion_tokens=CJK_CAP)
    amount = CJK_WORST * 11 // 2  # five and a half worst cases
    with replicas(databases, tmp_path, limited_config(fake_provider, [model], amount), 2) as (_, urls):
        user, admin, limit_id = caller_on(urls, fake_provider)
        counts = asyncio.run(wave(urls, user, model, 50, fake_provider, CJK, CJK_CAP))
        settled = limit_status(urls[1], admin, limit_id)
    admitted = counts.get(200, 0)
    assert admitted >= 1 and counts.get(402, 0) == 50 - admitted, counts
    # The provider billed a token a character: the worst case, every time.
    assert int(settled["used"]) == admitted * CJK_WORST
    # An upper bound leaves no estimate error to add: settled usage stays within the amount.
    assert int(settled["used"]) <= amount
    assert settled["reserved"] == "0"


def test_the_last_calls_of_a_limit_on_three_processes_are_admitted_while_they_fit_and_no_longer(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """Bursts of concurrent calls spread over three processes: each burst admits exactly the calls
    whose reservation fits what is left (none refused that fits, none admitted that does not), until
    what is left is less than one reservation; the spend never passes the amount."""
    models = [f"tail{n}-{uuid.uuid4().hex[:8]}" for n in range(12)]
    for model in models:
        fake_provider.script(model, held=True)
    amount = 4 * HOLD - 1  # three calls fit at once, and a fourth by one nano-unit short
    config = limited_config(fake_provider, models, amount)
    with replicas(databases, tmp_path, config, 3) as (_, urls):
        user, admin, limit_id = caller_on(urls, fake_provider)
        used = 0
        bursts = iter(models)
        while True:
            fits = (amount - used) // HOLD
            counts = asyncio.run(wave(urls, user, next(bursts), 6, fake_provider))
            assert counts == ({200: fits, 402: 6 - fits} if fits else {402: 6}), (amount - used, counts)
            used += fits * ACTUAL
            standing = limit_status(urls[-1], admin, limit_id)
            assert (int(standing["used"]), standing["reserved"]) == (used, "0")
            if not fits:
                break
    assert amount - HOLD < used <= amount  # spent down to less than one reservation
