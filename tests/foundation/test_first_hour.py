"""A new user's first hour: every mistake gets one clear line naming the fix, and the quick start's
API key works with the openai SDK."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.support.gateway import TEST_JWT_SECRET, Gateway
from tests.support.gateway import test_encryption_keys as encryption_keys

SWITCHBOARD = Path(sys.executable).with_name("switchboard")
BAD_DATABASE_URLS = [
    "sqlite:///switchboard.db",  # a synchronous driver
    "postgres://nobody@127.0.0.1/switchboard",  # a typo'd scheme
    "not a url at all",
    "postgresql+asyncpg://nobody:hunter2-secret@127.0.0.1:1/missing",  # nothing listens there
]


def _clean_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(settings)
    return env


def _configured_env(**settings: str) -> dict[str, str]:
    secrets = {
        "SWITCHBOARD_JWT_SECRET": TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": encryption_keys("k1"),
    }
    return _clean_env(**(secrets | settings))


def _gateway_env(gateway: Gateway) -> dict[str, str]:
    """The settings of a running test gateway, as a CLI verb run beside it would have them."""
    settings = gateway.settings
    key = settings.encryption_keys[0]
    return _configured_env(
        SWITCHBOARD_ENCRYPTION_KEYS=f"{key.kid}:{key.key.get_secret_value()}",
        SWITCHBOARD_DATA_DIR=str(settings.data_dir),
        SWITCHBOARD_DATABASE_URL=settings.database_url,
        SWITCHBOARD_CONFIG=str(settings.config_path),
    )


def _run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SWITCHBOARD), *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


def _one_clear_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    err = done.stderr.strip()
    assert done.returncode != 0, done
    assert "Traceback" not in err and len(err.splitlines()) <= 2, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.xdist_group("first-hour-bad-database-urls")  # a dozen processes: the other worker's share
@pytest.mark.parametrize("url", BAD_DATABASE_URLS)
@pytest.mark.parametrize(
    "verb", [["serve", "--port", "0"], ["db", "upgrade"], ["usage", "export", "--economy", "default"]]
)
def test_a_bad_database_url_is_one_line_naming_the_setting(tmp_path: Path, url: str, verb: list[str]) -> None:
    done = _run(verb, _configured_env(SWITCHBOARD_DATABASE_URL=url), tmp_path)
    err = _one_clear_line(done, "SWITCHBOARD_DATABASE_URL")
    assert "hunter2-secret" not in err
    assert "ready (" not in err


@pytest.mark.parametrize(
    ("url", "meant"),
    [
        ("sqlite:///switchboard.db", "sqlite+aiosqlite:///switchboard.db"),
        ("postgres://sb:hunter2-secret@db/switchboard", "postgresql+asyncpg://sb:***@db/switchboard"),
    ],
)
def test_a_sync_driver_gets_the_async_url_it_needs(tmp_path: Path, url: str, meant: str) -> None:
    done = _run(["db", "upgrade"], _configured_env(SWITCHBOARD_DATABASE_URL=url), tmp_path)
    err = _one_clear_line(done, "SWITCHBOARD_DATABASE_URL", f"did you mean {meant} ?")
    assert "hunter2-secret" not in err


def test_a_port_in_use_is_one_line_and_never_ready(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(["serve", "--port", str(port)], _configured_env(), tmp_path)
    _one_clear_line(done, f"port {port}", "--port")
    assert "ready (" not in done.stderr + done.stdout


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_worker_that_cannot_start_says_why_in_one_line(tmp_path: Path, workers: str) -> None:
    # A table in the way of the first migration: the database opens, the workers' migration fails.
    with sqlite3.connect(tmp_path / "in-the-way.db") as db:
        db.execute("CREATE TABLE idempotency_keys (id INTEGER PRIMARY KEY)")
    env = _configured_env(SWITCHBOARD_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'in-the-way.db'}")
    done = _run(["serve", "--port", "0", "--workers", workers], env, tmp_path)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr and "ready (" not in done.stderr
    assert "switchboard: cannot start: migrating the database to revision" in done.stderr
    assert "idempotency_keys" in done.stderr


@pytest.mark.parametrize(
    "verb", [["token"], ["key", "create", "--email", "a@example.test"], ["db", "upgrade"]]
)
def test_a_verb_outside_the_data_dir_refuses_with_a_hint_and_creates_nothing(
    tmp_path: Path, verb: list[str]
) -> None:
    done = _run(verb, _clean_env(), tmp_path)
    _one_clear_line(done, "no development secret", "switchboard serve", "SWITCHBOARD_DATA_DIR")
    assert done.stdout == ""
    assert not (tmp_path / "var").exists()


def test_token_without_sub_says_which_user_it_made(tmp_path: Path) -> None:
    done = _run(["token"], _configured_env(), tmp_path)
    assert done.returncode == 0
    sub = done.stderr.split("a new user ", 1)[1].split(";", 1)[0]
    assert f"--sub {sub}" in done.stderr and uuid.UUID(sub)
    assert done.stdout.count(".") == 2  # stdout is the token alone, for $(…)


def test_key_create_gives_an_api_key_the_openai_sdk_uses(
    gateway: Gateway, fake_provider: Any, tmp_path: Path
) -> None:
    env = _gateway_env(gateway)
    email = f"first-{uuid.uuid4().hex[:10]}@example.test"
    created = _run(
        ["user", "create", "--email", email, "--role", "User"], env, tmp_path, stdin="a-long-password\n"
    )
    assert created.returncode == 0, created.stderr
    issued = _run(["key", "create", "--email", email, "--name", "quickstart"], env, tmp_path)
    assert issued.returncode == 0, issued.stderr
    key = issued.stdout.strip()
    assert key.startswith("svc_api_") and len(key) == len("svc_api_") + 49
    assert key not in issued.stderr and "shown only this once" in issued.stderr
    keyed = gateway.client(key)
    stored = keyed.post(
        "/llm-credentials",
        json={"provider": "openai", "secret": "sk-first-hour", "base_url": f"{fake_provider.base_url}/v1"},
    )
    assert stored.status_code == 201, stored.text
    client = OpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "Say hi"}], stream=True
    )
    assert "fake provider" in "".join(
        chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
    )
    me = gateway.client(key).get("/protected/jwt").json()
    assert me["user_id"] == created.stdout.split()[0] and me["auth_method"] == "api_key"


def test_key_create_for_an_unknown_user_says_how_to_make_one(gateway: Gateway, tmp_path: Path) -> None:
    done = _run(["key", "create", "--email", "nobody@example.test"], _gateway_env(gateway), tmp_path)
    _one_clear_line(done, "switchboard user create")
    assert done.stdout == ""


def test_export_into_a_missing_folder_is_a_clear_error(gateway: Gateway, tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "jan.csv"
    done = _run(
        ["usage", "export", "--economy", "default", "--output", str(target)], _gateway_env(gateway), tmp_path
    )
    assert done.returncode == 2
    _one_clear_line(done, "--output", "does not exist")


def test_export_ends_with_a_summary_line(gateway: Gateway, tmp_path: Path) -> None:
    target = tmp_path / "all.csv"
    done = _run(
        ["usage", "export", "--economy", "default", "--output", str(target)], _gateway_env(gateway), tmp_path
    )
    assert done.returncode == 0, done.stderr
    rows = len(target.read_text().splitlines()) - 1
    assert done.stderr.strip().startswith(f"switchboard: exported {rows:,} records to {target}")


def test_an_unexpected_failure_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    # A data directory that is a file cannot hold the secrets.
    (tmp_path / "var").write_text("not a directory")
    plain = _run(["serve", "--port", "0"], _clean_env(), tmp_path)
    _one_clear_line(plain)
    debug = _run(["--debug", "serve", "--port", "0"], _clean_env(), tmp_path)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_version_and_serve_help_say_what_they_should(tmp_path: Path) -> None:
    version = _run(["--version"], _clean_env(), tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("switchboard 0.")
    helped = _run(["serve", "--help"], _clean_env(), tmp_path)
    assert "default: 8000" in helped.stdout and "default: 127.0.0.1" in helped.stdout


@pytest.fixture(scope="module")
def strict_gateway(make_gateway: Any) -> Gateway:
    gateway: Gateway = make_gateway(env={"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false"})
    return gateway


@pytest.mark.parametrize("base_url", ["http://api.example.com/v1", "https://127.0.0.1:11434/v1"])
def test_a_refused_base_url_names_the_setting_that_allows_it(strict_gateway: Gateway, base_url: str) -> None:
    user = strict_gateway.user()
    response = user.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": "sk-first-hour-test", "base_url": base_url}
    )
    assert response.status_code == 422
    assert "SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS=true" in response.json()["error"]
