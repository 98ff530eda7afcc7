"""GET /openapi.json: OpenAPI 3.1, version 0.14.0, one tag per area, unique operationIds, the seed's ids."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import httpx
import pytest

from switchboard.app import OPENAPI_TAGS
from tests.support.gateway import Gateway

HTTP_METHODS = {"get", "post", "put", "patch", "delete", "head", "options"}
# (method, path with parameters blanked) -> the operationId the seed gives it.
SEED_OPERATION_IDS = {
    ("get", "/agents"): "listAgents_Agents",
    ("post", "/agents"): "createAgent_Agents",
    ("post", "/agents/discover"): "discoverAgents_Agents",
    ("get", "/agents/{}"): "getAgent_Agents",
    ("post", "/agents/validate"): "validateAgent_Agents",
    ("post", "/agents/{}/versions/{}/retire"): "retireAgentVersion_Agents",
    ("post", "/mcp"): "handleMcpHttp_Misc",
}


@pytest.fixture(scope="module")
def document(gateway: Gateway) -> dict[str, Any]:
    response = httpx.get(gateway.url + "/openapi.json", timeout=60)  # built on first request: slow when busy
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_the_document_is_openapi_3_1_with_the_spec_version(document: dict[str, Any]) -> None:
    assert re.fullmatch(r"3\.1\.\d+", document["openapi"])
    assert document["info"]["version"] == "0.14.0"


def test_the_declared_tags_are_one_per_area(document: dict[str, Any]) -> None:
    assert [tag["name"] for tag in document["tags"]] == [tag["name"] for tag in OPENAPI_TAGS]


def test_every_operation_carries_a_declared_tag(document: dict[str, Any]) -> None:
    declared = {tag["name"] for tag in OPENAPI_TAGS}
    untagged = [
        f"{method.upper()} {path}"
        for method, path, operation in operations(document)
        if not operation.get("tags") or not set(operation["tags"]) <= declared
    ]
    assert untagged == []


def test_operation_ids_are_present_and_unique(document: dict[str, Any]) -> None:
    ids = [operation.get("operationId") for _, _, operation in operations(document)]
    assert None not in ids
    assert [name for name, count in Counter(ids).items() if count > 1] == []


def test_the_seed_operation_ids_name_their_operations(document: dict[str, Any]) -> None:
    found = {
        (method, re.sub(r"\{[^}]+\}", "{}", path)): op["operationId"]
        for method, path, op in operations(document)
    }
    wrong = {
        where: found[where]
        for where, expected in SEED_OPERATION_IDS.items()
        if found.get(where, expected) != expected
    }
    assert wrong == {}
    assert found[("post", "/mcp")] == "handleMcpHttp_Misc"


def test_the_anonymous_probes_and_documents_are_described(document: dict[str, Any]) -> None:
    paths = document["paths"]
    for path in (
        "/health",
        "/ready",
        "/version",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
    ):
        assert "get" in paths[path], path
    version_schema = document["components"]["schemas"]["VersionInfo"]
    assert sorted(version_schema["required"]) == ["api_version", "built_at", "git_sha", "service"]


def test_every_replayed_post_declares_the_idempotency_key_header(document: dict[str, Any]) -> None:
    declared: dict[str, bool] = {}
    for method, path, operation in operations(document):
        if method != "post":
            continue
        headers = [p for p in operation.get("parameters", []) if p["in"] == "header"]
        declared[path] = any(p["name"] == "Idempotency-Key" for p in headers)
        if declared[path]:
            (parameter,) = [p for p in headers if p["name"] == "Idempotency-Key"]
            assert parameter["required"] is False
            assert parameter["schema"]["maxLength"] == 255
    assert declared["/v1/chat/completions"] and declared["/v1/embeddings"]
    assert declared["/agents"] and declared["/llm-credentials"] and declared["/working-groups"]
    # /auth answers carry tokens, never stored, so never replayed; /mcp is a challenge, not an operation.
    assert not any(ok for path, ok in declared.items() if path.startswith("/auth/") or path == "/mcp")
    assert all(ok for path, ok in declared.items() if not path.startswith("/auth/") and path != "/mcp")


def test_every_operation_declares_its_4xx_answers_in_its_surfaces_shape(document: dict[str, Any]) -> None:
    # The first prefix that matches names the shape: Anthropic's surface answers in Anthropic's.
    shapes = {
        "/v1/messages": "AnthropicError",
        "/v1/": "OpenAIError",
        "/agents": "RegistryError",
        "/llm-credentials": "FlatError",
    }
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert {"400", "404"} <= set(responses), (method, path)
            if not path.startswith(("/health", "/version", "/ready", "/.well-known", "/mcp")):
                assert "401" in responses, (method, path)
            if method in ("post", "patch"):
                assert "413" in responses, (method, path)
            for prefix, schema in shapes.items():
                if path.startswith(prefix):
                    ref = responses["400"]["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/" + schema), (method, path, ref)
                    break
    assert "429" in document["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert "OpenAIError" in document["components"]["schemas"]
    assert "AnthropicError" in document["components"]["schemas"]


def test_uuid_path_parameters_declare_their_format(document: dict[str, Any]) -> None:
    (parameter,) = [
        p
        for p in document["paths"]["/llm-credentials/{credential_id}"]["get"]["parameters"]
        if p["in"] == "path"
    ]
    assert parameter["schema"]["format"] == "uuid"
