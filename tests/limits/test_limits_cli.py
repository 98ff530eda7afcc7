"""`switchboard limits list|set|status`: on the database, readable output, one-line errors, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from switchboard.metering.economies import economy_id_for
from tests.limits.conftest import new_economy
from tests.support import gateway as support
from tests.support.gateway import Gateway, User

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


def run_cli(gateway: Gateway, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_JWT_SECRET": support.TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(gateway.settings.config_path),
    }
    return subprocess.run(
        [str(SWITCHBOARD), "limits", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_set_creates_then_changes_the_same_limit_and_the_api_sees_it(
    limits_gateway: Gateway, admin: User, tmp_path: Path
) -> None:
    economy = new_economy(admin)
    user = str(uuid.uuid4())
    args = ["set", "--subject-type", "user", "--subject-id", user, "--economy", economy["slug"]]
    created = run_cli(
        limits_gateway, tmp_path, *args, "--metric", "cost", "--window", "month", "--amount", "500"
    )
    assert created.returncode == 0, created.stderr
    limit_id = created.stdout.split()[0]
    assert f"user {user} in economy {economy['id']}: cost/month 500 (api)" in created.stdout
    assert created.stderr.strip() == f"switchboard: created limit {limit_id}"
    changed = run_cli(
        limits_gateway,
        tmp_path,
        *args,
        "--metric",
        "cost",
        "--window",
        "month",
        "--amount",
        "900",
        "--allow-unpriced",
    )
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.split()[0] == limit_id
    assert changed.stderr.strip() == f"switchboard: updated limit {limit_id}"
    seen = admin.client.get(f"/limits/{limit_id}").json()
    assert (seen["amount"], seen["allow_unpriced"], seen["economy_id"], seen["created_by"]) == (
        "900",
        True,
        economy["id"],
        None,
    )


def test_list_shows_every_limit_or_one_subjects_and_status_shows_what_is_left(
    limits_gateway: Gateway, admin: User, tmp_path: Path
) -> None:
    economy = new_economy(admin, budget="4000")
    made = run_cli(
        limits_gateway,
        tmp_path,
        *("set", "--subject-type", "economy", "--subject-id", economy["slug"]),
        *("--metric", "requests", "--window", "total", "--amount", "3"),
    )
    assert made.returncode == 0, made.stderr
    listed = run_cli(
        limits_gateway, tmp_path, "list", "--subject-type", "economy", "--subject-id", economy["slug"]
    )
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(f"economy {economy['id']}: cost/month 4000 (budget)")
    assert lines[1] == made.stdout.strip()
    assert listed.stderr.strip() == "switchboard: 2 limits"
    everything = run_cli(limits_gateway, tmp_path, "list")
    assert everything.returncode == 0 and set(lines) <= set(everything.stdout.splitlines())
    assert f"economy {economy_id_for('capped')}: cost/month" in everything.stdout
    status = run_cli(limits_gateway, tmp_path, "status", made.stdout.split()[0])
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[1:] == [
        "used:      0",
        "reserved:  0",
        "remaining: 3",
        "resets at: never",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--subject-type", "economy", "--subject-id", "capped", "--amount", "1.5"],
            "--amount is a whole number",
        ),
        (
            ["--subject-type", "economy", "--subject-id", "capped", "--amount", "-1"],
            "--amount is a whole number",
        ),
        (["--subject-type", "economy", "--subject-id", "no-such", "--amount", "1"], "economy not found"),
        (["--subject-type", "user", "--subject-id", "bob", "--amount", "1"], "a user is named by its id"),
        (
            ["--subject-type", "agent", "--subject-id", "no-such-agent", "--amount", "1"],
            "agent no-such-agent not found",
        ),
        (
            ["--subject-type", "economy", "--subject-id", "capped", "--economy", "default", "--amount", "1"],
            "--economy narrows",
        ),
        (
            ["--subject-type", "user", "--subject-id", "nobody@example.test", "--amount", "1"],
            "no user with email",
        ),
    ],
)
def test_set_refuses_bad_input_in_one_line_with_exit_2(
    limits_gateway: Gateway, tmp_path: Path, args: list[str], message: str
) -> None:
    done = run_cli(limits_gateway, tmp_path, "set", "--metric", "cost", "--window", "day", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert done.stderr.startswith("switchboard limits set: ")


def test_set_will_not_change_a_budget_limit(limits_gateway: Gateway, tmp_path: Path) -> None:
    done = run_cli(
        limits_gateway,
        tmp_path,
        *("set", "--subject-type", "economy", "--subject-id", "capped"),
        *("--metric", "cost", "--window", "month", "--amount", "1"),
    )
    assert done.returncode == 2
    assert "budget" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "nope"], "'nope' is not a limit id"),
        (["status", str(uuid.uuid4())], "no limit"),
        (["list", "--subject-type", "user"], "--subject-type and --subject-id go together"),
    ],
)
def test_status_and_list_errors_are_one_line_with_exit_2(
    limits_gateway: Gateway, tmp_path: Path, args: list[str], message: str
) -> None:
    done = run_cli(limits_gateway, tmp_path, *args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


def test_an_unknown_metric_is_refused_by_the_parser(limits_gateway: Gateway, tmp_path: Path) -> None:
    done = run_cli(
        limits_gateway,
        tmp_path,
        *("set", "--subject-type", "economy", "--subject-id", "capped"),
        *("--metric", "dollars", "--window", "day", "--amount", "1"),
    )
    assert done.returncode == 2
    assert "invalid choice: 'dollars'" in done.stderr
