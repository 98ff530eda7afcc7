"""What telemetry reads of a model call's attempt: a protocol, so observability needs no import of
the pipeline that hands it the attempt (llm/call_attempt.Attempt satisfies it)."""

from __future__ import annotations

import uuid
from typing import Protocol


class _Model(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...


class _Credential(Protocol):
    @property
    def scope(self) -> str: ...


class AttemptFacts(Protocol):
    @property
    def endpoint(self) -> str: ...

    @property
    def model(self) -> _Model: ...

    @property
    def credential(self) -> _Credential: ...

    @property
    def economy_id(self) -> uuid.UUID: ...

    @property
    def number(self) -> int: ...
