"""Takes the README's console screenshots against a seeded gateway: `python -m tests.console.screenshots`.

Not a test: it writes docs/console/*.png (or the folder given) from the same seed the browser tests use.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.conftest import default_test_config
from tests.console.conftest import CHROMIUM, ROOM_NAME, World, seed
from tests.fakes.provider import FakeProvider
from tests.support.gateway import build_settings, start_gateway, write_config
from tests.support.servers import ServerThread

OUT = Path(__file__).resolve().parents[2] / "docs" / "console"


def _sign_in(page: Any, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/console")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_label("Password").press("Enter")
    page.get_by_role("button", name="Sign out").wait_for()


def _view(page: Any, name: str) -> None:
    page.get_by_role("navigation").get_by_role("link", name=name, exact=True).click()
    page.get_by_role("heading", name=name, exact=True, level=2).wait_for()
    page.locator(".loading").first.wait_for(state="detached")


def _shoot(page: Any, out: Path, name: str) -> None:
    page.wait_for_timeout(200)  # let the status region and focus settle
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def take(world: World, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    url = world.gateway.url
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/console")
        _shoot(page, out, "sign-in")
        _sign_in(page, url, world.admin.email, world.admin.password)
        page.get_by_label("Economy").select_option(index=1)
        page.get_by_role("table").first.wait_for()
        _shoot(page, out, "usage")
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        _sign_in(page, url, world.alice.email, world.alice.password)
        _view(page, "Limits")
        _shoot(page, out, "limits")
        _view(page, "Credentials")
        page.get_by_role("button", name="Add credential").click()
        _shoot(page, out, "credentials")
        _view(page, "API keys")
        page.get_by_label("Name").fill("notebook")
        page.get_by_role("button", name="Create").click()
        page.get_by_role("region", name="New API key").wait_for()
        _shoot(page, out, "api-keys")
        _view(page, "Agents")
        page.get_by_role("link", name="Helper").click()
        page.get_by_role("table").first.wait_for()
        _shoot(page, out, "agents")
        _view(page, "Rooms")
        page.get_by_role("link", name=ROOM_NAME).click()
        page.get_by_role("table").first.wait_for()
        _shoot(page, out, "rooms")
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        _sign_in(page, url, world.viewer.email, world.viewer.password)
        _view(page, "Credentials")
        _shoot(page, out, "viewer-credentials")
        browser.close()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        provider = FakeProvider()
        provider_server = ServerThread(provider.app, name="fake-provider").start()
        provider.base_url = provider_server.url
        config = write_config(Path(tmp), default_test_config(provider.base_url))
        settings = build_settings(Path(tmp), f"sqlite+aiosqlite:///{tmp}/switchboard.db", config)
        gateway = start_gateway(settings)
        try:
            take(seed(gateway, provider), out)
        finally:
            gateway.stop()
            provider_server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
