"""Placeholder until the fake provider lands."""

from starlette.applications import Starlette


class FakeProvider:
    def __init__(self) -> None:
        self.app = Starlette()
        self.base_url = ""
