"""Secrets at rest: never in the database in plain text, and bound to their row."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pytest

from switchboard.errors import SwitchboardError
from tests.conftest import GatewayFactory
from tests.credentials.factories import fresh_secret, new_credential
from tests.credentials.store_calls import in_reach, move_ciphertexts, reveal
from tests.groups.factories import room_cast
from tests.support.databases import sqlite_bytes
from tests.support.gateway import Gateway


def _store_some_secrets(gateway: Gateway, marker: str) -> list[str]:
    """Stores secrets, and a label `marker` that must be found: proof the check reads the stored rows."""
    cast = room_cast(gateway)
    secrets = [new_credential(cast.member, provider)[1] for provider in ("openai", "anthropic", "gemini")]
    secrets.append(new_credential(cast.owner, room_id=cast.room_id, label=marker)[1])
    body, replaced = new_credential(cast.owner)
    newer = fresh_secret("sk-newer-")
    assert (
        cast.owner.client.patch(f"/llm-credentials/{body['id']}", json={"secret": newer}).status_code == 200
    )
    return [*secrets, replaced, newer]


def _sqlite_files(gateway: Gateway) -> list[Path]:
    path = Path(gateway.settings.database_url.split("///", 1)[1])
    return [p for p in (path, Path(f"{path}-wal")) if p.exists()]


def test_the_sqlite_file_and_its_wal_never_hold_a_secret(make_gateway: GatewayFactory) -> None:
    gateway = make_gateway()
    if not gateway.settings.is_sqlite:
        pytest.skip("SQLite only; PostgreSQL has its own test")
    marker = f"marker-{uuid.uuid4().hex}"
    secrets = _store_some_secrets(gateway, marker)
    files = _sqlite_files(gateway)
    assert len(files) == 2, "expected the database file and its write-ahead log"
    assert marker.encode() in sqlite_bytes(*files)
    for file in files:
        data = sqlite_bytes(file)
        for secret in secrets:
            assert secret.encode() not in data, f"{file.name} holds a secret"
            assert secret[:-4].encode() not in data


async def _every_text_and_bytea_value(url: str) -> list[bytes]:
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        columns = await conn.fetch(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type IN "
            "('text', 'character varying', 'character', 'bytea', 'json', 'jsonb', 'ARRAY')"
        )
        values: list[bytes] = []
        for column in columns:
            rows = await conn.fetch(
                f'SELECT "{column["column_name"]}"::text AS v, '
                f'"{column["column_name"]}" AS raw FROM "{column["table_name"]}"'
            )
            for row in rows:
                raw = row["raw"]
                values.append(raw if isinstance(raw, bytes) else (row["v"] or "").encode())
        return values
    finally:
        await conn.close()


def test_no_postgres_text_or_bytea_column_holds_a_secret(make_gateway: GatewayFactory) -> None:
    gateway = make_gateway()
    if gateway.settings.is_sqlite:
        pytest.skip("PostgreSQL only; SQLite has its own test")
    marker = f"marker-{uuid.uuid4().hex}"
    secrets = _store_some_secrets(gateway, marker)
    values = asyncio.run(_every_text_and_bytea_value(gateway.settings.database_url))
    assert marker.encode() in values, "expected to read the stored rows"
    for secret in secrets:
        assert not any(secret.encode() in value for value in values)


def test_a_ciphertext_swapped_between_two_rows_fails_to_decrypt(gateway: Gateway) -> None:
    user = gateway.user()
    first, first_secret = new_credential(user, "openai")
    second, second_secret = new_credential(user, "anthropic")
    before = in_reach(gateway, user)
    assert (reveal(gateway, before["openai"]), reveal(gateway, before["anthropic"])) == (
        first_secret,
        second_secret,
    )
    move_ciphertexts(gateway, {first["id"]: second["id"], second["id"]: first["id"]})
    after = in_reach(gateway, user)
    for provider in ("openai", "anthropic"):
        with pytest.raises(SwitchboardError) as refused:
            reveal(gateway, after[provider])
        assert refused.value.status == 500 and "decrypted" in refused.value.message


def test_a_ciphertext_copied_to_another_users_row_fails_to_decrypt(gateway: Gateway) -> None:
    victim, thief = gateway.user(), gateway.user()
    stolen, _ = new_credential(victim, "openai")
    own, _ = new_credential(thief, "openai")
    move_ciphertexts(gateway, {own["id"]: stolen["id"]})
    with pytest.raises(SwitchboardError):
        reveal(gateway, in_reach(gateway, thief)["openai"])
