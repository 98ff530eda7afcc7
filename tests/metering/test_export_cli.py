"""`switchboard usage export`: the same records as the HTTP export, to a file or stdout; clear failures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from switchboard.metering.economies import economy_id_for
from tests.metering.conftest import EconomyFactory, at, make_outcome, record
from tests.support import gateway as support
from tests.support.gateway import Gateway, User

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


def run_cli(gateway: Gateway, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_JWT_SECRET": support.TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(gateway.settings.config_path),
    }
    return subprocess.run(
        [str(SWITCHBOARD), "usage", "export", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_export_writes_what_the_http_export_sends(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory, tmp_path: Path
) -> None:
    economy = make_economy()
    record(
        metering_gateway,
        [
            make_outcome(economy["id"], admin.id, occurred_at=at(f"2025-04-0{day}T10:00:00+00:00"))
            for day in (1, 2, 3)
        ],
    )
    export_path = f"/economies/{economy['id']}/usage/export"
    output = tmp_path / "usage.csv"
    to_file = run_cli(metering_gateway, tmp_path, "--economy", economy["slug"], "--output", str(output))
    assert to_file.returncode == 0, to_file.stderr
    assert output.read_bytes() == admin.client.get(export_path).content
    assert not output.with_name("usage.csv.partial").exists()

    window = {"from": "2025-04-02", "to": "2025-04-02"}
    to_stdout = run_cli(
        metering_gateway,
        tmp_path,
        "--economy",
        economy["id"],
        "--format",
        "ndjson",
        "--from",
        window["from"],
        "--to",
        window["to"],
    )
    assert to_stdout.returncode == 0, to_stdout.stderr
    http = admin.client.get(export_path, params={"format": "ndjson"} | window)
    assert to_stdout.stdout.encode() == http.content
    assert [orjson.loads(line)["occurred_at"] for line in to_stdout.stdout.splitlines()] == [
        "2025-04-02T10:00:00Z"
    ]


def test_cli_export_of_an_unknown_economy_or_bad_dates_fails_clearly(
    metering_gateway: Gateway, tmp_path: Path
) -> None:
    unknown = run_cli(
        metering_gateway, tmp_path, "--economy", "no-such-economy", "--output", str(tmp_path / "x.csv")
    )
    assert unknown.returncode == 1 and "no-such-economy" in unknown.stderr
    assert not (tmp_path / "x.csv").exists()
    reversed_range = run_cli(
        metering_gateway,
        tmp_path,
        "--economy",
        str(economy_id_for("default")),
        "--from",
        "2025-02-01",
        "--to",
        "2025-01-01",
    )
    assert reversed_range.returncode == 2 and "from" in reversed_range.stderr
