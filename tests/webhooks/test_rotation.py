"""`switchboard keys rotate` re-seals webhook secrets too: the old key can then be dropped."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from tests.conftest import GatewayFactory
from tests.credentials.test_rotation import _cli_rotate, _spec
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support.databases import DatabaseFactory
from tests.webhooks.conftest import create_webhook, webhooks_config


def test_after_rotation_deliveries_are_signed_with_only_the_new_key_configured(
    make_gateway: GatewayFactory,
    databases: DatabaseFactory,
    fake_provider: Any,
    receiver: WebhookReceiver,
    tmp_path: Path,
) -> None:
    old, new = os.urandom(32), os.urandom(32)
    database = asyncio.run(databases.create())
    config = webhooks_config(fake_provider.base_url)
    before = make_gateway(
        config=config, database_url=database, env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k1", old))}
    )
    admin = before.user(role="Admin")
    hook = create_webhook(before.url, admin, receiver, ["limit.refused"])
    before.stop()
    rotated = _cli_rotate(database, tmp_path, _spec(("k2", new), ("k1", old)))
    assert rotated.returncode == 0, rotated.stderr
    assert "webhook secrets: re-encrypted 1" in rotated.stdout
    after = make_gateway(
        config=config, database_url=database, env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k2", new))}
    )
    assert after.client(admin.token).post(f"/webhooks/{hook['id']}/test").status_code == 202
    [delivery] = receiver.wait_for(hook["path"], 1)
    assert delivery.verified
