"""The start-up and shutdown contract each domain may implement in its own `lifecycle` module."""

from __future__ import annotations

from typing import Protocol

from fastapi import FastAPI


class DomainLifecycle(Protocol):
    async def startup(self, app: FastAPI) -> None: ...

    async def shutdown(self, app: FastAPI) -> None: ...
