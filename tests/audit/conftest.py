"""Audit fixtures: a gateway of its own per test (each tampers with its chain), the CLI, raw SQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tests.support import gateway as support
from tests.support.gateway import Gateway, User

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


def run_cli(
    gateway: Gateway, tmp_path: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_JWT_SECRET": support.TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(gateway.settings.config_path),
    }
    return subprocess.run(
        [str(SWITCHBOARD), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def sql(gateway: Gateway, statement: str, **params: Any) -> list[Any]:
    """Run SQL on the gateway's database directly, as someone tampering with it would."""

    async def run() -> list[Any]:
        async with gateway.app.state.engine.begin() as connection:
            result = await connection.execute(text(statement), params)
            return list(result.all()) if result.returns_rows else []

    rows: list[Any] = gateway.server.call_soon(run())
    return rows


def audit_events(admin: User, **params: Any) -> list[dict[str, Any]]:
    """Every visible event, newest first, following the cursor."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": 100, **params, **({"cursor": cursor} if cursor else {})}
        response = admin.client.get("/audit", params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        found.extend(page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def make_rooms(user: User, count: int) -> list[str]:
    ids = []
    for n in range(count):
        response = user.client.post("/working-groups", json={"name": f"room {n}"})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids
