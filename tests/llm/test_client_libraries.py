"""Real client libraries against the gateway: litellm, llama-index's OpenAILike, a browser page."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.auth.conftest import issue_key
from tests.conftest import GatewayFactory
from tests.llm.conftest import Caller, make_caller, unique_model
from tests.support.gateway import Gateway

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_litellm_as_a_client_strips_its_openai_prefix_and_still_reaches_the_model(
    caller: Caller, gateway: Gateway, fake_provider: Any
) -> None:
    import litellm

    response = litellm.completion(
        model="openai/gpt-4o-mini",  # litellm sends `gpt-4o-mini`: its prefix names its own provider
        api_base=f"{gateway.url}/v1",
        api_key=caller.user.token,
        messages=[{"role": "user", "content": "hi"}],
        num_retries=0,
    )
    assert response.choices[0].message.content
    (seen,) = [r for r in fake_provider.received("gpt-4o-mini") if r.api_key == caller.keys["openai"]]
    assert seen.body["model"] == "gpt-4o-mini"


def test_llama_index_openai_like_with_its_defaults_uses_legacy_completions(
    caller: Caller, gateway: Gateway, fake_provider: Any
) -> None:
    from llama_index.llms.openai_like import OpenAILike

    model = unique_model("li")
    fake_provider.script(model, reply="It works.")
    llm = OpenAILike(model=f"openai/{model}", api_base=f"{gateway.url}/v1", api_key=caller.user.token)
    assert llm.complete("Say it works").text == "It works."
    streamed = "".join(part.delta or "" for part in llm.stream_complete("Say it works"))
    assert streamed == "It works."
    paths = [seen.path for seen in fake_provider.received(model)]
    assert paths and all(path.endswith("/v1/completions") for path in paths)


PAGE = b"""<!doctype html><html><body><script>
window.callGateway = async (url, key) => {
  const response = await fetch(url + "/v1/chat/completions", {
    method: "POST",
    headers: {"Authorization": "Bearer " + key, "Content-Type": "application/json"},
    body: JSON.stringify({model: "openai/gpt-4o-mini", messages: [{role: "user", content: "hi"}]}),
  });
  const body = await response.json();
  return {status: response.status, model: response.headers.get("x-switchboard-model"),
          text: body.choices ? body.choices[0].message.content : JSON.stringify(body)};
};
</script></body></html>"""


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """A page on another origin (another port), as a browser app calling the gateway would be."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _browser_call(page_url: str, gateway_url: str, key: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(page_url)
            result: dict[str, Any] = page.evaluate(
                "([url, key]) => window.callGateway(url, key).catch(e => ({status: 0, text: String(e)}))",
                [gateway_url, key],
            )
            assert not errors, errors
            return result
        finally:
            browser.close()


def test_a_browser_page_calls_the_gateway_with_an_api_key_when_its_origin_is_allowed(
    make_gateway: GatewayFactory, fake_provider: Any, page_origin: str
) -> None:
    allowed = make_gateway(env={"SWITCHBOARD_CORS_ORIGINS": page_origin})
    closed = make_gateway()
    for gateway, expect_ok in ((allowed, True), (closed, False)):
        caller = make_caller(gateway, fake_provider, providers=("openai",))
        key = issue_key(gateway, caller.user.token)["api_key"]
        started = time.monotonic()
        result = _browser_call(page_origin, gateway.url, key)
        assert time.monotonic() - started < 60
        if expect_ok:
            assert result["status"] == 200, result
            assert result["model"] == "openai/gpt-4o-mini"
            assert result["text"]
        else:
            assert result["status"] == 0 and "Failed to fetch" in result["text"], result
