"""Key rotation: every credential stays usable, also when a rotation is interrupted and run again."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

from switchboard.credentials.rotation import RotationReport, rotate
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.errors import SwitchboardError
from switchboard.kit.crypto import Keyring
from tests.conftest import GatewayFactory
from tests.credentials.factories import new_credential
from tests.credentials.store_calls import in_reach, reveal
from tests.groups.factories import room_cast
from tests.support.gateway import TEST_JWT_SECRET, Gateway, User

K1, K2, K3 = (os.urandom(32) for _ in range(3))
REPO = Path(__file__).resolve().parents[2]


def _spec(*keys: tuple[str, bytes]) -> str:
    return ",".join(f"{kid}:{base64.b64encode(key).decode()}" for kid, key in keys)


def _rotate(url: str, keyring: Keyring, **options: int) -> RotationReport:
    async def run() -> RotationReport:
        engine = make_engine(url)
        try:
            return await rotate(make_sessionmaker(engine), keyring, **options)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _all_usable(gateway: Gateway, holders: list[tuple[User, str | None, str]]) -> None:
    for user, room_id, secret in holders:
        assert reveal(gateway, in_reach(gateway, user, room_id)["openai"]) == secret


def _usable(gateway: Gateway, holder: tuple[User, str | None, str]) -> bool:
    user, room_id, secret = holder
    try:
        return reveal(gateway, in_reach(gateway, user, room_id)["openai"]) == secret
    except SwitchboardError:
        return False


def _cli_rotate(url: str, data_dir: Path, keys: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SWITCHBOARD_ENV": "development",
        "SWITCHBOARD_DATABASE_URL": url,
        "SWITCHBOARD_ENCRYPTION_KEYS": keys,
        "SWITCHBOARD_JWT_SECRET": TEST_JWT_SECRET,
        "SWITCHBOARD_DATA_DIR": str(data_dir),
    }
    return subprocess.run(
        [sys.executable, "-m", "switchboard.cli", "keys", "rotate", "--batch-size", "2"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_rotation_keeps_every_credential_usable_even_when_interrupted(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    serving = make_gateway(env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k1", K1))})
    url = serving.settings.database_url
    holders: list[tuple[User, str | None, str]] = []
    for _ in range(4):
        user = serving.user()
        holders.append((user, None, new_credential(user)[1]))
    cast = room_cast(serving)
    holders.append((cast.member, cast.room_id, new_credential(cast.owner, room_id=cast.room_id)[1]))

    # Without the old key nothing can be re-encrypted, and nothing is touched.
    blind = _rotate(url, Keyring([("k3", K3)]))
    assert blind.failed == {"k1": 5} and sum(blind.rewrapped.values()) == 0

    # Interrupted after its first batch: the gateway, still on k1 only, keeps serving the rest.
    first = _rotate(url, Keyring([("k2", K2), ("k1", K1)]), batch_size=2, max_batches=1)
    assert (dict(first.rewrapped), first.finished) == ({"k1": 2}, False)
    still_k1 = [h for h in holders if _usable(serving, h)]
    assert len(still_k1) == 3
    both = make_gateway(database_url=url, env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k2", K2), ("k1", K1))})
    _all_usable(both, holders)
    new_user = both.user()
    holders.append((new_user, None, new_credential(new_user)[1]))  # sealed under k2 while rotating

    # Run again through the command line: it finishes the job and says what it did.
    done = _cli_rotate(url, tmp_path, _spec(("k2", K2), ("k1", K1)))
    assert done.returncode == 0, done.stderr
    assert "re-encrypted 3 credential(s): 3 from k1" in done.stdout
    assert "already under k2: 3" in done.stdout

    only_new = make_gateway(database_url=url, env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k2", K2))})
    _all_usable(only_new, holders)
    again = _cli_rotate(url, tmp_path, _spec(("k2", K2)))
    assert again.returncode == 0 and "re-encrypted 0 credential(s)" in again.stdout
    assert "already under k2: 6" in again.stdout


def test_the_command_reports_credentials_it_cannot_decrypt(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    serving = make_gateway(env={"SWITCHBOARD_ENCRYPTION_KEYS": _spec(("k1", K1))})
    new_credential(serving.user())
    result = _cli_rotate(serving.settings.database_url, tmp_path, _spec(("k3", K3)))
    assert result.returncode == 1
    assert "could not decrypt 1 credential(s) sealed under k1" in result.stdout
