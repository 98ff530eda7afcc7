"""The settlement transaction: a call's record and what its ending settles, committed together once."""

from __future__ import annotations

import uuid

import pytest

from switchboard.metering.outcome import new_record_id
from switchboard.settlement.call import Settlement
from tests.limits.test_enforcement import add_limit, status
from tests.metering.conftest import make_outcome
from tests.support.gateway import Gateway, User


@pytest.fixture
def admin(gateway: Gateway) -> User:
    return gateway.user(role="Admin")


def test_a_settlement_written_again_after_its_commit_counts_once(gateway: Gateway, admin: User) -> None:
    """A batch whose commit went through but whose acknowledgement was lost is written again: its
    records are known by id and skipped, and so is what they count against their limits."""
    user_id = uuid.uuid4()
    economy = admin.client.post("/economies", json={"slug": f"s-{user_id.hex[:10]}", "name": "S"}).json()
    tokens = add_limit(admin, subject_type="economy", subject_id=economy["id"], metric="tokens", window="day",
                       amount="1000000")  # fmt: skip
    # A rolling bucket that refills one request in six minutes: the count read back is the settlement's.
    per_hour = add_limit(admin, subject_type="economy", subject_id=economy["id"], metric="requests",
                         window="hour", amount="10")  # fmt: skip
    outcome = make_outcome(economy["id"], user_id, prompt_tokens=30, completion_tokens=12)

    async def write_twice() -> None:
        registry = gateway.app.state.limits
        await registry.reload()
        limits = tuple(registry.get(uuid.UUID(item["id"])) for item in (tokens, per_hour))
        settlement = Settlement(call_id=uuid.uuid4().hex, limits=limits, record_id=new_record_id())
        await gateway.app.state.call_sink.record(outcome, settlement)
        await gateway.app.state.call_sink.record(outcome, settlement)

    gateway.server.call_soon(write_twice(), timeout=60)
    assert status(admin, tokens["id"])["used"] == "42"
    assert status(admin, per_hour["id"])["used"] == "1"
