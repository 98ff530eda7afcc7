"""Nothing secret at rest: no API key, password or refresh token in the database in plain text."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from tests.auth.conftest import issue_key, login, make_account, sign_in
from tests.support.databases import sqlite_bytes
from tests.support.gateway import Gateway


def stored_bytes(database_url: str) -> bytes:
    """Everything the database holds: the SQLite file and its WAL, or every row of every table."""
    if database_url.startswith("sqlite"):
        path = Path(database_url.split("///", 1)[1])
        return sqlite_bytes(path, Path(f"{path}-wal"))

    async def dump() -> bytes:
        conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            rows = []
            for table in tables:
                # A whole row as text covers every column, whatever its type.
                rows += await conn.fetch(f'SELECT t::text AS row FROM "{table["tablename"]}" t')
            return "\n".join(row["row"] for row in rows).encode()
        finally:
            await conn.close()

    return asyncio.run(dump())


def test_no_key_password_or_refresh_token_is_stored_in_plain_text(gateway: Gateway) -> None:
    account = make_account(gateway, "Operator")
    session = login(gateway, account)
    key = issue_key(gateway, session["token"])
    exchanged = sign_in(gateway, "/auth/api-key", {"api_key": key["api_key"]})
    rotated = sign_in(gateway, "/auth/refresh", {"refresh_token": exchanged["refresh_token"]})
    secrets = [
        account.password,
        key["api_key"],
        session["refresh_token"],
        exchanged["refresh_token"],
        rotated["refresh_token"],
    ]
    # The random part alone, in case something stored it without its prefix or checksum.
    secrets += [s[-49:-6] for s in secrets if s.startswith("svc_")]

    dump = stored_bytes(gateway.settings.database_url)
    # The dump does hold the rows these calls wrote: the account, and the key's display prefix.
    assert account.email.encode() in dump and key["key_prefix"].encode() in dump
    assert b"$argon2id$" in dump
    for secret in secrets:
        assert secret.encode() not in dump, f"{secret[:8]}… is stored in plain text"
