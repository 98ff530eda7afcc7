"""Re-encrypts every stored credential under the active key, in small committed batches, online."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.audit.chain import record as audit_record
from switchboard.audit.events import ROTATED, Change
from switchboard.credentials.binding import associated_data
from switchboard.credentials.models import LlmCredential
from switchboard.kit.crypto import CryptoError, Keyring, key_id_of

UNREADABLE_KID = "(unreadable)"


@dataclass
class RotationReport:
    active_kid: str
    rewrapped: Counter[str] = field(default_factory=Counter)  # old key id -> rows re-encrypted
    current: int = 0  # rows already under the active key
    raced: int = 0  # rows a writer changed meanwhile (a writer always seals under the active key)
    failed: Counter[str] = field(default_factory=Counter)  # key id -> rows that could not be opened
    finished: bool = False  # False when stopped by `max_batches` before the end of the table

    def lines(self) -> list[str]:
        moved = sum(self.rewrapped.values())
        per_key = ", ".join(f"{count} from {kid}" for kid, count in sorted(self.rewrapped.items()))
        out = [
            f"active key: {self.active_kid}",
            f"re-encrypted {moved} credential(s)" + (f": {per_key}" if per_key else ""),
            f"already under {self.active_kid}: {self.current}",
        ]
        if self.raced:
            out.append(f"changed by a writer during rotation (already under {self.active_kid}): {self.raced}")
        for kid, count in sorted(self.failed.items()):
            out.append(
                f"could not decrypt {count} credential(s) sealed under {kid}: is that key still "
                "in SWITCHBOARD_ENCRYPTION_KEYS?"
            )
        if not self.finished:
            out.append("stopped before the end; run it again to continue")
        return out


async def _rotate_batch(
    session: AsyncSession, keyring: Keyring, after: uuid.UUID | None, size: int, report: RotationReport
) -> uuid.UUID | None:
    """One batch in one transaction; returns the last id seen, or None at the end of the table."""
    query = (
        select(
            LlmCredential.id,
            LlmCredential.scope,
            LlmCredential.user_id,
            LlmCredential.room_id,
            LlmCredential.provider,
            LlmCredential.sealed_secret,
        )
        .order_by(LlmCredential.id)
        .limit(size)
    )
    if after is not None:
        query = query.where(LlmCredential.id > after)
    rows = (await session.execute(query)).all()
    rewrapped_before = sum(report.rewrapped.values())
    for row in rows:
        try:
            kid = key_id_of(row.sealed_secret)
        except CryptoError:
            report.failed[UNREADABLE_KID] += 1
            continue
        if kid == keyring.active_kid:
            report.current += 1
            continue
        owner = row.user_id if row.scope == "user" else row.room_id
        try:
            resealed = keyring.reseal(
                row.sealed_secret, associated_data(row.id, row.scope, owner, row.provider)
            )
        except CryptoError:
            report.failed[kid] += 1
            continue
        # Only if nobody changed the secret since we read it; otherwise theirs stands.
        result = await session.execute(
            update(LlmCredential)
            .where(LlmCredential.id == row.id, LlmCredential.sealed_secret == row.sealed_secret)
            .values(sealed_secret=resealed)
        )
        if result.rowcount:  # type: ignore[attr-defined]
            report.rewrapped[kid] += 1
        else:
            report.raced += 1
    rewrapped = sum(report.rewrapped.values()) - rewrapped_before
    if rewrapped:
        change = Change(
            "encryption_key.rotate",
            "encryption_key",
            keyring.active_kid,
            {"credentials_rewrapped": [None, rewrapped], "sealed_secret": [ROTATED, ROTATED]},
        )
        await audit_record(session, change)
    if len(rows) < size:
        return None
    last: uuid.UUID = rows[-1].id
    return last


async def rotate(
    sessionmaker: async_sessionmaker[AsyncSession],
    keyring: Keyring,
    *,
    batch_size: int = 100,
    max_batches: int | None = None,
) -> RotationReport:
    """Safe to interrupt and to run again: each batch commits on its own, and rows already under
    the active key are left alone. Keep the old keys configured (after the new one) until it is done."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    report = RotationReport(active_kid=keyring.active_kid)
    after: uuid.UUID | None = None
    batches = 0
    while max_batches is None or batches < max_batches:
        async with sessionmaker() as session, session.begin():
            after = await _rotate_batch(session, keyring, after, batch_size, report)
        batches += 1
        if after is None:
            report.finished = True
            break
    return report
