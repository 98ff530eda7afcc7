"""Record retention: old records go, their hourly rollups stay, and what reads what says so."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from switchboard.kit.clock import utcnow
from switchboard.metering.models import UsageFiveMinuteRollupRow, UsageRollupRow
from switchboard.metering.retention import purge_records, retention_cut
from switchboard.settings import SettingsError, load_settings
from tests.conftest import GatewayFactory
from tests.metering.conftest import count_records, make_outcome, metering_config, record
from tests.metering.test_rollups import usage_cli
from tests.support.gateway import Gateway


@pytest.fixture()
def own_gateway(make_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """A database of its own: a purge deletes every economy's old records."""
    return make_gateway(config=metering_config(fake_provider.base_url))


def _economy(gateway: Gateway) -> tuple[Any, dict[str, Any]]:
    admin = gateway.user(role="Admin")
    response = admin.client.post("/economies", json={"slug": f"r-{uuid.uuid4().hex[:8]}", "name": "Retained"})
    assert response.status_code == 201, response.text
    return admin, response.json()


def test_a_purge_deletes_old_records_keeps_rollups_and_whole_hour_summaries(own_gateway: Gateway) -> None:
    admin, economy = _economy(own_gateway)
    now = utcnow()
    old = [now - timedelta(days=40, minutes=7 * index) for index in range(30)]
    recent = [now - timedelta(days=2, minutes=index) for index in range(5)]
    record(
        own_gateway, [make_outcome(economy["id"], admin.id, occurred_at=moment) for moment in old + recent]
    )
    window = {"group_by": "model", "from": (now - timedelta(days=60)).date().isoformat()}
    before = admin.client.get(f"/economies/{economy['id']}/usage/summary", params=window).json()
    cut = retention_cut(30, now)

    removed = own_gateway.server.call_soon(purge_records(own_gateway.app.state.sessionmaker, cut, batch=7))

    assert removed == 30
    assert count_records(own_gateway, economy_id=uuid.UUID(economy["id"])) == 5
    # The 5-minute rollups go with the records; the hourly ones stay.
    assert _rollup_rows(own_gateway, cut) == {"usage_5min_rollups": 0, "usage_rollups": 30}
    # An edge inside a purged hour counts nothing: its 5-minute rollups and records are gone.
    start, end = old[0] - timedelta(minutes=1), old[0] + timedelta(seconds=1)
    edge = {"group_by": "model", "from": start.isoformat(), "to": end.isoformat()}
    summary = admin.client.get(f"/economies/{economy['id']}/usage/summary", params=edge)
    assert summary.status_code == 200 and summary.json()["totals"]["requests"] == 0
    # `from` is a whole day: every hour of the range is read from the rollups, purged or not.
    after = admin.client.get(f"/economies/{economy['id']}/usage/summary", params=window).json()
    assert after == before and after["totals"]["requests"] == 35
    exported = admin.client.get(f"/economies/{economy['id']}/usage/export", params={"format": "ndjson"})
    assert len(exported.content.splitlines()) == 5  # exports and record lists hold what is kept
    # A limit created now starts from everything the economy used, purged records included.
    limit = admin.client.post(
        "/limits",
        json={
            "subject_type": "economy",
            "subject_id": economy["id"],
            "metric": "requests",
            "window": "total",
            "amount": "1000",
        },
    )
    assert limit.status_code == 201, limit.text
    assert admin.client.get(f"/limits/{limit.json()['id']}/status").json()["used"] == "35"


def _rollup_rows(gateway: Gateway, before: datetime) -> dict[str, int]:
    async def run() -> dict[str, int]:
        async with gateway.app.state.sessionmaker() as session:
            found = {}
            for table in (UsageFiveMinuteRollupRow, UsageRollupRow):
                query = select(func.sum(table.requests)).where(table.hour < before)
                found[table.__tablename__] = int(await session.scalar(query) or 0)
            return found

    return dict(gateway.server.call_soon(run()))


def test_the_cut_is_a_whole_hour_and_retention_is_at_least_a_day() -> None:
    moment = datetime(2025, 5, 20, 13, 45, 12, 5, tzinfo=UTC)
    assert retention_cut(7, moment) == datetime(2025, 5, 13, 13, tzinfo=UTC)
    with pytest.raises(ValueError, match="at least one day"):
        retention_cut(0, moment)


@pytest.mark.parametrize(("raw", "days"), [("", None), ("0", None), ("30", 30)])
def test_the_retention_setting_is_off_unless_given_days(raw: str, days: int | None, tmp_path: Path) -> None:
    env = {"SWITCHBOARD_DATA_DIR": str(tmp_path), "SWITCHBOARD_USAGE_RETENTION_DAYS": raw}
    assert load_settings(env).usage_retention_days == days


@pytest.mark.parametrize("raw", ["-3", "thirty", "1.5"])
def test_a_retention_that_is_not_whole_days_stops_the_start(raw: str, tmp_path: Path) -> None:
    env = {"SWITCHBOARD_DATA_DIR": str(tmp_path), "SWITCHBOARD_USAGE_RETENTION_DAYS": raw}
    with pytest.raises(SettingsError, match="USAGE_RETENTION_DAYS"):
        load_settings(env)


def test_the_purge_verb_needs_days_and_then_purges(own_gateway: Gateway, tmp_path: Path) -> None:
    admin, economy = _economy(own_gateway)
    record(own_gateway, [make_outcome(economy["id"], admin.id, occurred_at=utcnow() - timedelta(days=9))])
    refused = usage_cli(own_gateway, tmp_path, "purge")
    assert refused.returncode == 2 and "--days" in refused.stderr
    purged = usage_cli(own_gateway, tmp_path, "purge", SWITCHBOARD_USAGE_RETENTION_DAYS="8")
    assert purged.returncode == 0, purged.stderr
    assert "deleted 1 usage records" in purged.stdout
    # Hours past retention hold rollups and no records: verify leaves them out.
    verified = usage_cli(own_gateway, tmp_path, "verify", SWITCHBOARD_USAGE_RETENTION_DAYS="8")
    assert verified.returncode == 0, verified.stdout
