"""base_url: https only, no inside address in any spelling (422), unless private upstreams are allowed."""

from __future__ import annotations

import pytest

from tests.credentials.factories import fresh_secret, listed_ids, new_credential
from tests.support.gateway import Gateway

REFUSED = [
    "http://api.example.com/v1",
    "https://127.0.0.1/v1",
    "https://127.0.0.1:8443/v1",
    "https://2130706433/v1",
    "https://0x7f000001/v1",
    "https://0177.0.0.1/v1",
    "https://127.1/v1",
    "https://[::1]/v1",
    "https://[::ffff:127.0.0.1]/v1",
    "https://[::ffff:7f00:1]/v1",
    "https://169.254.169.254/latest",
    "https://[fd00:ec2::254]/",
    "https://100.100.100.200/",
    "https://10.0.0.5/v1",
    "https://172.16.3.4/v1",
    "https://192.168.1.10/v1",
    "https://0.0.0.0/v1",
    "https://localhost/v1",
    "https://LOCALHOST./v1",
    "https://api.localhost/v1",
    "ftp://files.example.com/",
    "https://user:pw@api.example.com/v1",
    "https:///v1",
    "https://api.example.com/v1?key=abc",
    "https://api.example.com:99999/v1",
    "not a url",
]


@pytest.mark.parametrize("url", REFUSED)
def test_a_refused_base_url_is_a_422_and_stores_nothing(strict_gateway: Gateway, url: str) -> None:
    user = strict_gateway.user()
    response = user.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), "base_url": url}
    )
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"
    assert response.json()["error"].startswith("base_url is refused")
    assert listed_ids(user) == []


@pytest.mark.parametrize(
    "url", ["https://93.184.216.34/v1", "https://[2606:2800:220:1::1]/v1", "https://no-such-host.invalid/v1"]
)
def test_a_public_address_or_an_unresolvable_name_is_accepted(strict_gateway: Gateway, url: str) -> None:
    body, _ = new_credential(strict_gateway.user(), base_url=url)
    assert body["base_url"] == url


def test_changing_base_url_to_an_inside_address_is_refused(strict_gateway: Gateway) -> None:
    user = strict_gateway.user()
    body, _ = new_credential(user, base_url="https://93.184.216.34/v1")
    response = user.client.patch(f"/llm-credentials/{body['id']}", json={"base_url": "https://10.1.2.3/v1"})
    assert response.status_code == 422
    assert user.client.get(f"/llm-credentials/{body['id']}").json() == body


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://10.0.0.5/v1", "http://localhost:11434"])
def test_allowing_private_upstreams_lifts_both_rules(gateway: Gateway, url: str) -> None:
    assert gateway.settings.allow_private_upstreams
    body, _ = new_credential(gateway.user(), base_url=url)
    assert body["base_url"] == url


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http://user:pw@127.0.0.1/v1", "nope"])
def test_allowing_private_upstreams_still_needs_a_plain_http_url(gateway: Gateway, url: str) -> None:
    response = gateway.user().client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), "base_url": url}
    )
    assert response.status_code == 422, response.text
