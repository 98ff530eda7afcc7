"""`switchboard keys rotate` for webhook signing secrets: each re-sealed under the active key."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.kit.crypto import CryptoError, Keyring, key_id_of
from switchboard.webhooks.models import WebhookRow
from switchboard.webhooks.secrets import reseal


@dataclass
class SecretsRotated:
    rewrapped: int = 0
    current: int = 0
    failed: int = 0  # sealed under a key no longer configured

    def lines(self) -> list[str]:
        out = [f"webhook secrets: re-encrypted {self.rewrapped}, already under the active key {self.current}"]
        if self.failed:
            out.append(f"could not decrypt {self.failed} webhook secret(s): is their key still configured?")
        return out


async def rotate_webhook_secrets(
    sessionmaker: async_sessionmaker[AsyncSession], keyring: Keyring
) -> SecretsRotated:
    """One transaction: webhooks are few. A secret changed meanwhile keeps the writer's (sealed
    under the active key anyway)."""
    report = SecretsRotated()
    async with sessionmaker() as session, session.begin():
        rows = (await session.execute(select(WebhookRow.id, WebhookRow.sealed_secret))).all()
        for row in rows:
            try:
                if key_id_of(row.sealed_secret) == keyring.active_kid:
                    report.current += 1
                    continue
                resealed = reseal(keyring, row.id, row.sealed_secret)
            except CryptoError:
                report.failed += 1
                continue
            await session.execute(
                update(WebhookRow)
                .where(WebhookRow.id == row.id, WebhookRow.sealed_secret == row.sealed_secret)
                .values(sealed_secret=resealed)
            )
            report.rewrapped += 1
    return report
