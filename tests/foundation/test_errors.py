"""Bad input gets a clear 4xx in the shape of its surface; a crash is a bare 500; every answer has an id."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest

from switchboard.errors import LimitRateExceeded, UpstreamTimeout, error_code_of
from tests.support.gateway import Gateway
from tests.support.probe import ProbeFactory, unique_name


def test_malformed_json_is_a_flat_400(probe_gateway: Gateway) -> None:
    user = probe_gateway.user()
    response = user.client.post(
        "/probe/items", content=b'{"name": "x",', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "BAD_REQUEST"
    assert body["error"] == "malformed JSON body"


def test_a_wrong_type_is_a_flat_400_naming_the_field_without_echoing_the_value(
    probe_gateway: Gateway,
) -> None:
    user = probe_gateway.user()
    response = user.client.post("/probe/items", json={"name": "x", "count": "sk-live-do-not-echo-1234"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "VALIDATION_FAILED"
    assert body["error"].startswith("count:")
    assert body["details"][0]["field"] == "count"
    assert "sk-live-do-not-echo-1234" not in response.text


def test_an_out_of_range_value_is_a_400(probe_gateway: Gateway) -> None:
    response = probe_gateway.user().client.post("/probe/items", json={"name": "x", "count": 10_001})
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_FAILED"


def test_a_json_array_instead_of_an_object_is_a_400(probe_gateway: Gateway) -> None:
    response = probe_gateway.user().client.post("/probe/items", json=[1, 2, 3])
    assert response.status_code == 400


def test_validation_errors_on_v1_have_openai_shape(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    wrong_type = client.post("/v1/probe", json={"name": ["not", "a", "string"]})
    assert wrong_type.status_code == 400
    error = wrong_type.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "name"
    malformed = client.post("/v1/probe", content=b"{", headers={"content-type": "application/json"})
    assert malformed.status_code == 400
    assert malformed.json()["error"]["type"] == "invalid_request_error"


def test_validation_errors_on_the_agents_registry_have_nested_shape(probe_gateway: Gateway) -> None:
    response = probe_gateway.user().client.post("/agents/probe", json={"count": 1})
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "VALIDATION_FAILED"
    # The seed types `details` as string | object | null; the failing field is named in it.
    assert isinstance(error["details"], dict)
    assert '"name"' in json.dumps(error["details"])


@pytest.mark.parametrize(
    ("path", "shape"),
    [("/no/such/route", "flat"), ("/v1/no-such-route", "openai"), ("/agents/x/y/z/nothing", "nested")],
)
def test_an_unknown_route_is_a_404_in_the_shape_of_its_surface(
    probe_gateway: Gateway, path: str, shape: str
) -> None:
    response = probe_gateway.client().get(path)
    assert response.status_code == 404
    body = response.json()
    if shape == "flat":
        assert body == {"error": "no such route", "code": "NOT_FOUND"}
    elif shape == "openai":
        assert body["error"]["type"] == "invalid_request_error"
    else:
        assert body["error"]["code"] == "NOT_FOUND"


def test_a_wrong_method_is_a_405_with_allow(probe_gateway: Gateway) -> None:
    response = probe_gateway.client().delete("/health")
    assert response.status_code == 405
    assert response.json()["error"] == "method not allowed"
    assert "GET" in response.headers["allow"]


@pytest.fixture(scope="module")
def small_body_gateway(make_probe_gateway: ProbeFactory) -> Iterator[Gateway]:
    yield make_probe_gateway(env={"SWITCHBOARD_MAX_BODY_BYTES": "1024"})


def test_a_body_over_the_limit_is_a_413(small_body_gateway: Gateway) -> None:
    client = small_body_gateway.user().client
    big = {"name": "x" * 2000}
    response = client.post("/probe/items", json=big)
    assert response.status_code == 413
    assert response.json() == {"error": "request body over 1024 bytes", "code": "BAD_REQUEST"}
    assert response.headers["x-request-id"]


def test_a_chunked_body_over_the_limit_is_a_413(small_body_gateway: Gateway) -> None:
    client = small_body_gateway.user().client

    def chunks() -> Iterator[bytes]:
        yield b'{"name": "'
        for _ in range(20):
            yield b"y" * 100
        yield b'"}'

    response = client.post("/probe/items", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_a_413_on_v1_has_openai_shape(small_body_gateway: Gateway) -> None:
    response = small_body_gateway.user().client.post("/v1/probe", json={"name": "x" * 2000})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_body_within_the_limit_is_served(small_body_gateway: Gateway) -> None:
    response = small_body_gateway.user().client.post("/probe/items", json={"name": unique_name()})
    assert response.status_code == 201


def test_an_unhandled_exception_is_a_500_without_internals(probe_gateway: Gateway) -> None:
    name = unique_name("crash")
    response = probe_gateway.user().client.post(
        "/probe/crash", json={"name": name}, headers={"x-request-id": "crash-1"}
    )
    assert response.status_code == 500
    assert response.json() == {"error": "internal error", "code": "INTERNAL_ERROR"}
    assert "Traceback" not in response.text
    assert "boom" not in response.text and name not in response.text
    assert response.headers["x-request-id"] == "crash-1"


def test_a_request_id_is_generated_when_none_is_given(probe_gateway: Gateway) -> None:
    first = probe_gateway.client().get("/health").headers["x-request-id"]
    second = probe_gateway.client().get("/health").headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert first != second


def test_a_given_request_id_is_echoed_on_success_and_on_error(probe_gateway: Gateway) -> None:
    client = probe_gateway.client()
    assert client.get("/health", headers={"x-request-id": "abc-123"}).headers["x-request-id"] == "abc-123"
    assert client.get("/nowhere", headers={"x-request-id": "abc-404"}).headers["x-request-id"] == "abc-404"


def test_an_unsafe_request_id_is_replaced(probe_gateway: Gateway) -> None:
    given = "x" * 200
    echoed = probe_gateway.client().get("/health", headers={"x-request-id": given}).headers["x-request-id"]
    assert echoed != given
    assert re.fullmatch(r"[0-9a-f]{32}", echoed)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("PUT", "/llm-credentials/00000000-0000-0000-0000-000000000001", {"GET", "PATCH", "DELETE"}),
        ("DELETE", "/working-groups", {"GET", "POST"}),
        ("GET", "/v1/chat/completions", {"POST"}),
        ("PUT", "/economies/default", {"GET", "PATCH"}),
    ],
)
def test_a_405_names_every_method_of_the_path_in_allow(
    gateway: Gateway, method: str, path: str, expected: set[str]
) -> None:
    response = gateway.client(gateway.user().token).request(method, path)
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert expected <= allowed
    assert method not in allowed


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (RecursionError("maximum recursion depth exceeded"), "internal_error"),
        (KeyError("choices"), "internal_error"),
        (asyncio.CancelledError(), "cancelled"),
        (UpstreamTimeout(), "LLM_FAILED"),
        (LimitRateExceeded("requests limit reached", extra={}), "rate_limit_exceeded"),
    ],
)
def test_a_failed_attempt_records_a_stable_code_never_an_exception_class_name(
    error: BaseException, code: str
) -> None:
    assert error_code_of(error) == code
