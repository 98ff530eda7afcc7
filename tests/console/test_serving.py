"""How the console's files are served: a strict CSP, same-origin assets only, nothing outside static/."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from switchboard.console.assets import MEDIA_TYPES, STATIC_DIR
from tests.support.gateway import Gateway

SVG_NAMESPACE = "http://www.w3.org/2000/svg"


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
        if tag == "link":
            self.links.append(dict(attrs).get("href") or "")


def test_the_console_page_is_served_with_a_strict_content_security_policy(gateway: Gateway) -> None:
    response = gateway.client().get("/console")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    directives = response.headers["content-security-policy"].split("; ")
    policy = {directive.split()[0]: directive.split()[1:] for directive in directives}
    assert policy["default-src"] == ["'none'"]
    assert policy["script-src"] == policy["connect-src"] == policy["style-src"] == ["'self'"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-request-id"]


def test_the_page_has_no_inline_script_and_names_no_other_origin() -> None:
    resources = _Resources()
    resources.feed((STATIC_DIR / "index.html").read_text(encoding="utf-8"))
    assert resources.scripts == [{"type": "module", "src": "/console/static/app.js"}]
    assert resources.links and all(href.startswith("/console/static/") for href in resources.links)
    for path in STATIC_DIR.iterdir():
        text = path.read_text(encoding="utf-8").replace(SVG_NAMESPACE, "")
        # The one URL: a placeholder in the credential form's Base URL field.
        urls = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text)
        assert urls in ([], ["https://api.openai.com"]), path
        assert "@import" not in text and "url(" not in text, path
        # Text goes in as text nodes: nothing stored can become markup.
        assert not re.search(r"\.(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write", text), path


def test_every_shipped_file_is_served_with_its_type_and_nothing_else_is(gateway: Gateway) -> None:
    client = gateway.client()
    shipped = sorted(STATIC_DIR.iterdir())
    assert {path.suffix for path in shipped} <= set(MEDIA_TYPES)
    for path in shipped:
        response = client.get(f"/console/static/{path.name}")
        assert response.status_code == 200, path.name
        assert response.headers["content-type"] == MEDIA_TYPES[path.suffix]
        assert response.content == path.read_bytes()
    for name in ("nope.js", "..%2Frouter.py", "%2e%2e%2fassets.py", ".hidden.js", "router.py"):
        response = client.get(f"/console/static/{name}")
        assert response.status_code == 404, name
        assert response.headers["content-type"] == "application/json"


def test_the_console_is_not_part_of_the_api_description_and_answers_only_get(gateway: Gateway) -> None:
    client = gateway.client()
    assert not [path for path in client.get("/openapi.json").json()["paths"] if path.startswith("/console")]
    response = client.post("/console")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
