"""GET /docs (SPEC §2, anonymous): Swagger UI from the files the gateway ships (swagger-ui-dist, pinned
by hash), under the console's Content-Security-Policy, so a token pasted into "Authorize" meets no
third-party script."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest

from switchboard.console.assets import CONTENT_SECURITY_POLICY
from tests.console.conftest import CHROMIUM
from tests.support.gateway import Gateway


@pytest.fixture(scope="module")
def chromium(gateway: Gateway) -> Iterator[Any]:
    # After the gateway: sync Playwright runs its own event loop in this thread while it is started.
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()
    finally:
        playwright.stop()


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[dict[str, str | None]] = []  # scripts and stylesheets
        self.inline_scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src") is None:
            self.inline_scripts += 1
        if tag == "script" or (tag == "link" and found.get("rel") == "stylesheet"):
            self.loaded.append(found)


def test_the_docs_page_loads_only_pinned_files_of_this_origin_under_the_consoles_policy(
    gateway: Gateway,
) -> None:
    anonymous = gateway.client()
    page = anonymous.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    resources = _Resources()
    resources.feed(page.text)
    assert resources.inline_scripts == 0
    names = [found.get("src") or found.get("href") or "" for found in resources.loaded]
    assert names == ["/docs/swagger-ui.css", "/docs/swagger-ui-bundle.js", "/docs/docs.js"]
    for found, name in zip(resources.loaded, names, strict=True):
        served = anonymous.get(name)
        assert served.status_code == 200, name
        assert served.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        if name != "/docs/docs.js":  # ours; the vendored files are pinned by their hash
            digest = base64.b64encode(hashlib.sha384(served.content).digest()).decode()
            assert found.get("integrity") == f"sha384-{digest}", name
    for other in ("/docs/PINNED", "/docs/docs.html", "/docs/..%2Fstatic%2Fapp.js", "/docs/LICENSE"):
        assert anonymous.get(other).status_code == 404, other


def test_swagger_ui_shows_the_api_in_a_browser_with_no_policy_violation(
    gateway: Gateway, chromium: Any
) -> None:
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)  # a loaded 2-core machine renders Swagger UI slowly
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{gateway.url}/docs")
        page.wait_for_selector(".opblock")
        assert page.locator(".opblock").count() > 20  # the API's operations, rendered
        assert page.locator(".info .title").inner_text().startswith("Switchboard")
    finally:
        context.close()
    assert [url for url in requests if not url.startswith(gateway.url + "/")] == []
    assert errors == []
