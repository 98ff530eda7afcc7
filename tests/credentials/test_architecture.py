"""Source rules for secrets: one decrypt path, and no response schema that could carry a secret."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel, SecretStr

from switchboard.credentials import schemas as credential_schemas
from switchboard.groups import schemas as group_schemas

SRC = Path(__file__).resolve().parents[2] / "src" / "switchboard"


def _calls_on_keyring(method: str) -> list[str]:
    """Where `<something>keyring.<method>(...)` is called, as "file:function"."""
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == method
                    and ast.unparse(node.func.value).lower().endswith("keyring")
                ):
                    found.append(f"{path.relative_to(SRC)}:{func.name}")
    return sorted(set(found))


def test_only_reveal_decrypts_and_only_rotation_reseals() -> None:
    # A webhook's signing secret (SPEC §22) has its own single path, to sign a delivery. The response
    # cache seals its answers with the same key ring (SPEC §23) under associated data of its own
    # purpose, so that it can open an answer and never a credential's secret.
    assert _calls_on_keyring("open") == [
        "cache/store.py:get",
        "credentials/store.py:reveal",
        "webhooks/secrets.py:open_secret",
    ]
    assert _calls_on_keyring("reseal") == [
        "credentials/rotation.py:_rotate_batch",
        "webhooks/secrets.py:reseal",
    ]


def test_no_response_schema_has_a_field_that_could_hold_a_secret() -> None:
    outputs = [credential_schemas.CredentialOut, group_schemas.RoomOut, group_schemas.MemberOut]
    for schema in outputs:
        assert issubclass(schema, BaseModel)
        for name, field in schema.model_fields.items():
            assert field.annotation is not SecretStr
            assert name == "secret_hint" or ("secret" not in name and "key" not in name), (schema, name)
