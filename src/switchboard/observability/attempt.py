"""What telemetry reads of a model call's attempt and of its ending: protocols, so observability
needs no import of the pipeline or of metering, which hand it the call (llm/call_attempt.Attempt and
metering/outcome.CallOutcome satisfy them)."""

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


class SettledCall(Protocol):
    """What telemetry reads of a call's ending (metering/outcome.CallOutcome satisfies it)."""

    @property
    def economy_id(self) -> uuid.UUID: ...

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def endpoint(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def stream(self) -> bool: ...

    @property
    def error_code(self) -> str | None: ...

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...

    @property
    def cached_tokens(self) -> int: ...

    @property
    def cache_write_tokens(self) -> int: ...

    @property
    def reasoning_tokens(self) -> int: ...

    @property
    def latency_ms(self) -> int: ...

    @property
    def ttft_ms(self) -> int | None: ...

    @property
    def attempt(self) -> int: ...
