"""The worker's app factory: the collector paused while the app is built and started, frozen after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.gateway import TEST_JWT_SECRET
from tests.support.gateway import test_encryption_keys as encryption_keys

# Run in a child: freezing the collector in the test process would keep every test's garbage.
_SCRIPT = """
import asyncio, gc
from switchboard.serving.factory import create_app

app = create_app()
built = gc.isenabled()

async def start() -> None:
    async with app.router.lifespan_context(app):
        print(built, gc.isenabled(), gc.get_freeze_count() > 0)
    print(gc.isenabled())

asyncio.run(start())
"""


def test_the_collector_is_paused_until_the_app_has_started_then_frozen(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_DATA_DIR=str(tmp_path),
        SWITCHBOARD_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}",
        SWITCHBOARD_JWT_SECRET=TEST_JWT_SECRET,
        SWITCHBOARD_ENCRYPTION_KEYS=encryption_keys("k1"),
        SWITCHBOARD_LOG_LEVEL="WARNING",
    )
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "True"]
