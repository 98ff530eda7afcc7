"""The database-written export is byte for byte the export that Python wrote record by record."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from switchboard.metering import fast_export
from switchboard.metering.export import ExportFormat, orm_export_chunks
from switchboard.metering.fast_export import fast_chunks
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.usage_queries import UsageFilter
from tests.metering.conftest import EconomyFactory, make_outcome, record
from tests.support.databases import backend
from tests.support.gateway import Gateway

# Text that CSV must quote (or must not: csv leaves a lone \r alone), JSON must escape, PostgreSQL's
# record text must quote (metering/export_lines.py reads it back), or is not ASCII.
AWKWARD = [
    "plain",
    "",
    "comma, inside",
    'a "quoted" word',
    "line\nbreak",
    "carriage\rreturn",
    "crlf\r\nend",
    "tab\there",
    "back\\slash",
    "control \x01\x07\x08\x0b\x0c\x1b\x1f\x7f",
    "unicode é ñ 中文 😀 \u2028",
    " leading space and trailing ",
    '"',
    ",",
    "\\.",
    '{"json": [1, 2]}',
    "(parenthesised), as PostgreSQL's record text quotes it",
]
BASE = datetime(2024, 2, 29, 23, 59, 59, tzinfo=UTC)


def _awkward_outcomes(economy_id: uuid.UUID) -> list[CallOutcome]:
    rng = random.Random(8)
    outcomes = []
    for index in range(120):
        text = AWKWARD[index % len(AWKWARD)]
        # Zero and non-zero microseconds, a leap day, and ties on occurred_at (keyset pages must split them).
        moment = BASE + timedelta(
            seconds=index // 3, microseconds=0 if index % 4 == 0 else rng.randrange(1, 10**6)
        )
        maybe = index % 2 == 0
        outcomes.append(
            make_outcome(
                economy_id,
                uuid.uuid4(),
                request_id=f"req {text}"[:128],
                occurred_at=moment if index % 5 else BASE + timedelta(seconds=7),
                provider=["openai", "anthropic", "gemini"][index % 3],
                model=["gpt-4o-mini", "claude-3-5-haiku-latest", f"odd {text}"][index % 3][:200],
                selector=f"sel {text}",
                endpoint="/v1/chat/completions",
                stream=maybe,
                status=["ok", "error", "cancelled", "abandoned"][index % 4],
                room_id=uuid.uuid4() if maybe else None,
                agent_id=text[:64] if index % 3 == 0 else None,
                session_id=text if index % 3 == 1 else None,
                credential_id=None if index % 7 == 0 else uuid.uuid4(),
                error_code=text[:64] if index % 4 == 1 else None,
                prompt_tokens=rng.choice([0, 1, 999_999, rng.randrange(10**6)]),
                completion_tokens=rng.randrange(0, 10**5),
                cached_tokens=rng.randrange(0, 10),
                reasoning_tokens=rng.randrange(0, 10),
                latency_ms=rng.randrange(0, 10**5),
                ttft_ms=None if maybe else rng.randrange(0, 1000),
                idempotency_key=text if index % 6 == 0 else None,
                usage_estimated=index % 9 == 0,
            )
        )
    return outcomes


async def _collect(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


@pytest.fixture(scope="module")
def awkward_economy(metering_gateway: Gateway, make_economy_once: EconomyFactory) -> uuid.UUID:
    # Prices with decimals and a markup, so that cost, input/output prices and markup all vary.
    economy = make_economy_once(
        markup_bps=1234,
        price_overrides={"openai/gpt-4o-mini": {"input_per_mtok": "0.123456", "output_per_mtok": "7.5"}},
    )
    economy_id = uuid.UUID(economy["id"])
    record(metering_gateway, _awkward_outcomes(economy_id))
    return economy_id


@pytest.fixture(scope="module")
def make_economy_once(metering_gateway: Gateway) -> EconomyFactory:
    admin = metering_gateway.user(role="Admin")

    def create(**fields: object) -> dict[str, object]:
        body = {"slug": f"x-{uuid.uuid4().hex[:10]}", "name": "Export economy", **fields}
        response = admin.client.post("/economies", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    return create  # type: ignore[return-value]


@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
@pytest.mark.parametrize("page_size", [1, 7, 1000])  # 1: every record ends a page and is read back as its key
def test_the_database_written_export_is_byte_identical_to_the_python_one(
    metering_gateway: Gateway, awkward_economy: uuid.UUID, fmt: ExportFormat, page_size: int
) -> None:
    sessionmaker = metering_gateway.app.state.sessionmaker
    ranges = [
        UsageFilter(economy_id=awkward_economy),
        UsageFilter(
            economy_id=awkward_economy, start=BASE + timedelta(seconds=3), end=BASE + timedelta(seconds=30)
        ),
    ]

    async def both() -> list[tuple[bytes, bytes]]:
        return [
            (
                await _collect(orm_export_chunks(sessionmaker, usage, fmt, page_size)),
                await _collect(fast_chunks(sessionmaker, usage, fmt, page_size)),
            )
            for usage in ranges
        ]

    for python, database in metering_gateway.server.call_soon(both(), timeout=120):
        assert database == python
        assert python.count(b"\n") >= 30  # the ranges really hold records


@pytest.mark.skipif(backend() != "sqlite", reason="SQLite's JSON functions")
@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
def test_without_sqlite_json_functions_the_export_is_the_same(
    metering_gateway: Gateway, awkward_economy: uuid.UUID, fmt: ExportFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An SQLite older than 3.38 may lack json_array: every column is then read on its own.
    monkeypatch.setattr(fast_export, "_JSON_ARRAY", False)
    sessionmaker = metering_gateway.app.state.sessionmaker
    usage = UsageFilter(economy_id=awkward_economy)

    async def both() -> tuple[bytes, bytes]:
        return (
            await _collect(orm_export_chunks(sessionmaker, usage, fmt, 1000)),
            await _collect(fast_chunks(sessionmaker, usage, fmt, 7)),
        )

    python, database = metering_gateway.server.call_soon(both(), timeout=120)
    assert database == python and python.count(b"\n") >= 100


def test_an_export_of_nothing_is_the_header_alone(metering_gateway: Gateway) -> None:
    sessionmaker = metering_gateway.app.state.sessionmaker
    nobody = UsageFilter(economy_id=uuid.uuid4())

    async def run() -> tuple[bytes, bytes, bytes]:
        return (
            await _collect(fast_chunks(sessionmaker, nobody, "csv", 10)),
            await _collect(orm_export_chunks(sessionmaker, nobody, "csv", 10)),
            await _collect(fast_chunks(sessionmaker, nobody, "ndjson", 10)),
        )

    csv_fast, csv_python, ndjson_fast = metering_gateway.server.call_soon(run())
    assert csv_fast == csv_python and csv_fast.startswith(b"id,request_id,occurred_at,")
    assert ndjson_fast == b""
