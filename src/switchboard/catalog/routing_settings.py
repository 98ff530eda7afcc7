"""The catalog's `routing:` settings: how often to retry, how long to cool down, how long to wait."""

from __future__ import annotations

from dataclasses import dataclass, replace

from switchboard.config_file import RoutingEntry


@dataclass(frozen=True, slots=True)
class RoutingSettings:
    """SPEC §14's defaults; the catalog's `routing:` overrides them, a model's own `routing:` both."""

    retries: int = 1  # 1 + retries tries of one model with one credential, on connect errors and timeouts
    cooldown_s: float = 30.0
    first_byte_timeout_s: float = 60.0
    connect_timeout_s: float = 5.0

    def merged(self, entry: RoutingEntry | None) -> RoutingSettings:
        if entry is None:
            return self
        given = {name: value for name, value in entry.model_dump().items() if value is not None}
        return replace(self, **given) if given else self


DEFAULT_ROUTING = RoutingSettings()
