"""The gateway starts on a real port and answers."""

from tests.support.gateway import Gateway


def test_health_answers(gateway: Gateway) -> None:
    response = gateway.client().get("/health")
    assert response.status_code == 200
    assert response.headers["x-request-id"]
