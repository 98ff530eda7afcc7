"""Who an event names: sign-ins (failed ones too), the CLI, the config file at start; the export CLI."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson

from switchboard.metering.economies import economy_id_for
from tests.audit.conftest import audit_events, run_cli, sql
from tests.auth.conftest import login, make_account
from tests.conftest import GatewayFactory, default_test_config
from tests.llm.conftest import credentialed_user
from tests.support.gateway import Gateway


def test_a_failed_sign_in_is_recorded_although_its_request_is_refused(gateway: Gateway) -> None:
    account = make_account(gateway)
    with httpx.Client(base_url=gateway.url, timeout=30.0) as client:
        refused = client.post(
            "/auth/login",
            json={"email": account.email, "password": "wrong"},
            headers={"x-request-id": "failed-sign-in-1"},
        )
    assert refused.status_code == 401
    login(gateway, account)
    admin = gateway.user("Admin")
    failed = [
        e for e in audit_events(admin, action="auth.sign_in_failed") if e["request_id"] == "failed-sign-in-1"
    ]
    assert len(failed) == 1
    assert failed[0]["changes"]["email"] == [None, account.email]
    assert failed[0]["actor"]["auth_method"] == "anonymous"
    assert "wrong" not in orjson.dumps(failed[0]).decode()
    succeeded = audit_events(admin, action="auth.sign_in", target_id=str(account.id))
    assert [e["actor"]["user_id"] for e in succeeded] == [str(account.id)]
    assert succeeded[0]["changes"]["method"] == [None, "password"]


def test_an_api_key_on_a_call_is_not_a_sign_in(gateway: Gateway) -> None:
    owner = gateway.user()
    from tests.auth.conftest import issue_key

    key = issue_key(gateway, owner.token)
    keyed = gateway.client(key["api_key"])
    for _ in range(3):
        assert keyed.get("/protected/jwt").status_code == 200
    admin = gateway.user("Admin")
    assert audit_events(admin, actor=str(owner.id), action="auth.sign_in") == []


def test_a_cli_change_names_the_cli_and_the_config_files_economies_name_the_config(
    make_gateway: GatewayFactory, fake_provider: object, tmp_path: Path
) -> None:
    config = default_test_config("unused")
    config["economies"] = [*config["economies"], {"slug": "from-config", "name": "Declared"}]
    gateway = make_gateway(config=config)
    admin = gateway.user("Admin")
    declared = audit_events(admin, target_id=str(economy_id_for("from-config")))
    assert [e["action"] for e in declared] == ["economy.create"]
    assert declared[0]["actor"]["auth_method"] == "config"
    assert declared[0]["changes"]["name"] == [None, "Declared"]

    email = f"cli-{uuid.uuid4().hex[:8]}@example.test"
    made = run_cli(
        gateway, tmp_path, "user", "create", "--email", email, "--role", "Viewer", stdin="pw-long-enough-1\n"
    )
    assert made.returncode == 0, made.stderr
    created = [e for e in audit_events(admin, action="user.create") if e["changes"]["email"] == [None, email]]
    assert len(created) == 1
    assert created[0]["actor"]["auth_method"] == "cli"
    assert created[0]["changes"]["password_hash"] == [None, "rotated"]
    assert created[0]["changes"]["role"] == [None, "Viewer"]


def test_the_export_cli_writes_every_event_oldest_first_as_ndjson_and_csv(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    gateway = make_gateway()
    user = gateway.user()
    for n in range(3):
        assert user.client.post("/working-groups", json={"name": f"x{n}"}).status_code == 201
    listed = list(reversed(audit_events(gateway.user("Admin"))))
    ndjson = run_cli(gateway, tmp_path, "audit", "export", "--format", "ndjson")
    assert ndjson.returncode == 0, ndjson.stderr
    assert [orjson.loads(line) for line in ndjson.stdout.splitlines()] == listed
    target = tmp_path / "audit.csv"
    csv = run_cli(gateway, tmp_path, "audit", "export", "--format", "csv", "--output", str(target))
    assert csv.returncode == 0, csv.stderr
    lines = target.read_text().splitlines()
    assert lines[0].startswith("seq,id,at,actor_user_id")
    assert len(lines) == 1 + len(listed)
    assert [line.split(",")[1] for line in lines[1:]] == [e["id"] for e in listed]
    narrowed = run_cli(gateway, tmp_path, "audit", "export", "--to", "2000-01-01")
    assert narrowed.returncode == 0 and narrowed.stdout == ""
    bad = run_cli(gateway, tmp_path, "audit", "export", "--from", "soon")
    assert bad.returncode == 2 and "from" in bad.stderr


def test_a_model_call_that_changes_nothing_writes_no_audit_event(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway()
    user = credentialed_user(gateway, fake_provider, ("openai",))
    before = sql(gateway, "SELECT seq, hash FROM audit_chain_head")
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
    for stream in (False, True):
        response = user.client.post("/v1/chat/completions", json={**body, "stream": stream})
        assert response.status_code == 200, response.text
    assert sql(gateway, "SELECT seq, hash FROM audit_chain_head") == before
