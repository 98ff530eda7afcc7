"""What is measured: a service (its process tree) and the two calls made to it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

Mode = Literal["json", "stream"]
MODES: tuple[Mode, ...] = ("json", "stream")


@dataclass(frozen=True)
class Endpoint:
    """One POST: full URL, headers and the JSON body."""

    url: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 80

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def query(self) -> str:
        return urlsplit(self.url).query


@dataclass(frozen=True)
class Target:
    name: str
    pid: int  # root of the process tree whose CPU and memory are sampled
    workers: int
    json: Endpoint
    stream: Endpoint
    db_marker: str | None = None  # command-line text of the database server's processes serving it

    def endpoint(self, mode: Mode) -> Endpoint:
        return self.json if mode == "json" else self.stream
