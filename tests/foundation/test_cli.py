"""The `switchboard` command: token, db upgrade, a zero-config start, refusing weak production secrets."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from switchboard.auth.tokens import TokenCodec
from switchboard.cli import main
from switchboard.db.engine import make_engine
from switchboard.db.migrate import alembic_config
from tests.support.databases import DatabaseFactory
from tests.support.gateway import TEST_AUDIENCE, TEST_JWT_SECRET, Gateway
from tests.support.gateway import test_encryption_keys as encryption_keys
from tests.support.recorder import tls_context

SWITCHBOARD = Path(sys.executable).with_name("switchboard")
REPO = Path(__file__).resolve().parents[2]
# SPEC §2: what `switchboard token` puts in `permissions` when none are given.
ROLE_DEFAULTS = {
    "Admin": {"CryptoOperations", "CreateGroup", "CreateDelegationToken", "ReadUsage"},
    "Manager": {"CryptoOperations", "CreateGroup", "CreateDelegationToken"},
    "Operator": {"CryptoOperations", "CreateGroup"},
    "User": {"CreateGroup"},
    "Viewer": set(),
    "ApiClient": set(),
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No SWITCHBOARD_* variables, an empty working directory."""
    for name in list(os.environ):
        if name.startswith("SWITCHBOARD_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.fixture
def configured(clean_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    clean_env.setenv("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
    clean_env.setenv("SWITCHBOARD_ENCRYPTION_KEYS", encryption_keys("k1"))
    return clean_env


def mint(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["token", *args]) == 0
    token = capsys.readouterr().out.strip()
    return TokenCodec(TEST_JWT_SECRET, TEST_AUDIENCE).decode(token) | {"_token": token}


@pytest.mark.parametrize("role", sorted(ROLE_DEFAULTS))
def test_token_fills_permissions_from_the_role(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], role: str
) -> None:
    claims = mint(capsys, "--role", role)
    assert claims["role"] == role
    assert set(claims["permissions"]) == ROLE_DEFAULTS[role]  # type: ignore[arg-type]


def test_a_superadmin_token_holds_every_default_permission(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = mint(capsys, "--role", "SuperAdmin")
    assert set(claims["permissions"]) >= set().union(*ROLE_DEFAULTS.values())  # type: ignore[arg-type]


def test_explicit_permissions_replace_the_role_defaults(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = mint(capsys, "--role", "Viewer", "--permission", "ReadUsage", "--permission", "CreateGroup")
    assert sorted(claims["permissions"]) == ["CreateGroup", "ReadUsage"]  # type: ignore[arg-type]


def test_token_carries_sub_email_and_ttl_and_is_accepted_by_the_gateway(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], probe_gateway: Gateway
) -> None:
    sub = str(uuid.uuid4())
    claims = mint(capsys, "--sub", sub, "--email", "ada@example.test", "--ttl", "120")
    assert claims["sub"] == sub and claims["email"] == "ada@example.test"
    assert claims["exp"] - claims["iat"] == 120  # type: ignore[operator]
    assert claims["aud"] == [TEST_AUDIENCE]
    me = probe_gateway.client(str(claims["_token"])).get("/probe/me")
    assert me.status_code == 200 and me.json() == {"sub": sub}


def test_acting_as_mints_a_delegation_token_with_its_scopes(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    room = str(uuid.uuid4())
    claims = mint(capsys, "--acting-as", room, "--scope", "write", "--scope", "read")
    assert claims["auth_method"] == "delegation"
    assert claims["acting_as"] == room
    assert sorted(claims["delegation_scope"]) == ["read", "write"]  # type: ignore[arg-type]
    assert uuid.UUID(str(claims["delegation_token_id"]))
    assert mint(capsys, "--acting-as", room)["delegation_scope"] == ["read"]


@pytest.mark.parametrize(
    "args",
    [["--sub", "alice"], ["--acting-as", "room-1"], ["--ttl", "0"], ["--ttl", "-5"], ["--ttl", str(10**12)]],
)
def test_token_refuses_bad_arguments_clearly(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["token", *args])
    assert exited.value.code == 2
    assert "switchboard token: error:" in capsys.readouterr().err


def test_scope_without_acting_as_is_refused(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "--scope", "manage"]) == 2
    assert "--scope needs --acting-as" in capsys.readouterr().err


def test_db_upgrade_brings_a_fresh_database_to_the_latest_migration(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], databases: DatabaseFactory
) -> None:
    url = asyncio.run(databases.create())
    configured.setenv("SWITCHBOARD_DATABASE_URL", url)
    assert main(["db", "upgrade"]) == 0
    assert main(["db", "upgrade"]) == 0  # a second run changes nothing
    assert "latest migration" in capsys.readouterr().out
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()

    async def inspect_db() -> tuple[str, list[str]]:
        engine = make_engine(url)
        try:
            async with engine.connect() as conn:
                version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
                tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
            return str(version), tables
        finally:
            await engine.dispose()

    version, tables = asyncio.run(inspect_db())
    assert version == head
    assert "idempotency_keys" in tables


def test_db_upgrade_that_fails_says_why_and_exits_non_zero(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], databases: DatabaseFactory
) -> None:
    url = asyncio.run(databases.create())
    configured.setenv("SWITCHBOARD_DATABASE_URL", url)

    async def block_the_first_migration() -> None:
        engine = make_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.execute(text("CREATE TABLE idempotency_keys (id INTEGER PRIMARY KEY)"))
        finally:
            await engine.dispose()

    asyncio.run(block_the_first_migration())
    assert main(["db", "upgrade"]) == 1
    captured = capsys.readouterr()
    assert "switchboard: migrating the database to revision" in captured.err
    assert "idempotency_keys" in captured.err and "latest migration" not in captured.out


@pytest.mark.parametrize("workers", ["0", "-1", "two"])
def test_serve_refuses_a_worker_count_below_one(
    configured: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--workers", workers])
    assert exited.value.code == 2
    assert "--workers is a number of processes, at least 1" in capsys.readouterr().err


def test_production_without_a_jwt_secret_refuses_to_start(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("SWITCHBOARD_ENV", "production")
    clean_env.setenv("SWITCHBOARD_ENCRYPTION_KEYS", encryption_keys("k1"))
    assert main(["serve", "--port", "1"]) == 2
    assert "SWITCHBOARD_JWT_SECRET must be set and at least 32 bytes" in capsys.readouterr().err
    assert not Path("var/jwt_secret").exists()


def test_production_with_a_short_jwt_secret_refuses_to_start(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("SWITCHBOARD_ENV", "production")
    clean_env.setenv("SWITCHBOARD_JWT_SECRET", "too-short")
    clean_env.setenv("SWITCHBOARD_ENCRYPTION_KEYS", encryption_keys("k1"))
    assert main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "at least 32 bytes" in err and "too-short" not in err


def test_production_without_encryption_keys_refuses_to_start(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("SWITCHBOARD_ENV", "production")
    clean_env.setenv("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
    assert main(["serve", "--port", "1"]) == 2
    assert "SWITCHBOARD_ENCRYPTION_KEYS must be set" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_starts_with_zero_configuration(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    port = free_port()
    log_path = tmp_path / "serve.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(SWITCHBOARD), "serve", "--port", str(port)], cwd=tmp_path, env=env, stdout=log, stderr=log
        )
        try:
            health = _wait_for(f"http://127.0.0.1:{port}/health", process, timeout=20)
            elapsed = time.monotonic() - started
            version = httpx.get(f"http://127.0.0.1:{port}/version")
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=15)
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert elapsed < 15, f"took {elapsed:.1f}s to answer /health"
    assert version.status_code == 200 and version.json()["service"] == "svc-agents"
    for name in ("jwt_secret", "encryption_keys"):
        secret_file = tmp_path / "var" / name
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600, name
    assert (tmp_path / "var" / "switchboard.db").exists()
    output = log_path.read_text(encoding="utf-8")
    assert "GENERATED a development secret" in output
    # What an operator needs first: where data, catalog and database are, and where it listens.
    assert f"no config file at {tmp_path / 'config' / 'switchboard.yaml'}" in output
    assert (
        f"data dir {tmp_path / 'var'}" in output
        and f"sqlite at {tmp_path / 'var' / 'switchboard.db'}" in output
    )
    assert f"ready (database: sqlite) on http://127.0.0.1:{port}" in output
    assert (tmp_path / "var" / "jwt_secret").read_text().strip() not in output


def test_the_example_config_loads_as_is(make_gateway: object, tmp_path: Path) -> None:
    shutil.copy(REPO / "config" / "switchboard.yaml", tmp_path / "switchboard.yaml")
    gateway = make_gateway(config=(tmp_path / "switchboard.yaml").read_text())  # type: ignore[operator]
    assert gateway.settings.config.models, "the example lists models"
    assert httpx.get(gateway.url + "/health").status_code == 200


def _wait_for(url: str, process: subprocess.Popen[bytes], timeout: float) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise AssertionError(f"switchboard serve exited with {process.returncode}")
        try:
            return httpx.get(url, timeout=1, verify=tls_context())
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
