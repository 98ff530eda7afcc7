"""Which economy a model call is metered to (SPEC §5), with short-lived caches for the hot path."""

from __future__ import annotations

import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from sqlalchemy.engine import Engine

from switchboard.auth.principal import Principal
from switchboard.db.on_demand import SessionOnDemand
from switchboard.errors import Forbidden, NotFound
from switchboard.metering.access import role_in
from switchboard.metering.economies import DEFAULT_SLUG, Economy, find_economy

# How stale a cached answer may be. Economies change rarely and are never deleted; a removed
# participant may keep metering to the economy for at most this long on a replica.
CACHE_SECONDS = 2.0
_MAX_ENTRIES = 10_000

K = TypeVar("K")
V = TypeVar("V")
_MISSING = object()


class _TTLCache(Generic[K, V]):
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._items: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | object:
        item = self._items.get(key)
        if item is None or item[0] < time.monotonic():
            return _MISSING
        return item[1]

    def put(self, key: K, value: V) -> None:
        if len(self._items) >= _MAX_ENTRIES:
            self._items.clear()  # crude but bounded; a miss only costs one query
        self._items[key] = (time.monotonic() + self.ttl, value)

    def clear(self) -> None:
        self._items.clear()


@dataclass
class _DatabaseState:
    """Per database (engine): tests and tools run several gateways, on other databases, in one process."""

    default: Economy | None = None
    generation: int = 0  # bumped by forget_cached, so other caches (the usage writer's) follow suit
    economies: _TTLCache[str, Economy] = field(default_factory=lambda: _TTLCache(CACHE_SECONDS))
    participants: _TTLCache[tuple[uuid.UUID, uuid.UUID], bool] = field(
        default_factory=lambda: _TTLCache(CACHE_SECONDS)
    )
    room_defaults: _TTLCache[uuid.UUID, uuid.UUID | None] = field(
        default_factory=lambda: _TTLCache(CACHE_SECONDS)
    )


_STATES: weakref.WeakKeyDictionary[Engine, _DatabaseState] = weakref.WeakKeyDictionary()


def _state_for(engine: Engine) -> _DatabaseState:
    state = _STATES.get(engine)
    if state is None:
        state = _STATES[engine] = _DatabaseState()
    return state


def register_default(engine: Engine, economy: Economy) -> None:
    """Called at start with the config's default economy, so that most calls need no query at all."""
    _state_for(engine).default = economy


def cache_generation(engine: Engine) -> int:
    return _state_for(engine).generation


def forget_cached(engine: Engine) -> None:
    """Drop this replica's cached answers (after a local change, so its own caller sees it at once)."""
    state = _state_for(engine)
    state.generation += 1
    state.economies.clear()
    state.participants.clear()
    state.room_defaults.clear()


async def _economy(sessions: SessionOnDemand, state: _DatabaseState, ref: str) -> Economy:
    cached = state.economies.get(ref)
    if isinstance(cached, Economy):
        return cached
    economy = await find_economy(sessions(), ref)
    if economy is None:
        raise NotFound("economy not found", param="X-Economy-Id")
    state.economies.put(ref, economy)
    return economy


async def _participates(
    sessions: SessionOnDemand, state: _DatabaseState, economy: Economy, principal: Principal
) -> bool:
    key = (economy.id, principal.user_id)
    if state.participants.get(key) is True:
        return True
    found = await role_in(sessions(), economy.id, principal.user_id) is not None
    if found:
        state.participants.put(key, True)  # only yes is cached: a new participant works at once
    return found


async def _room_default(
    sessions: SessionOnDemand, state: _DatabaseState, room_id: uuid.UUID
) -> uuid.UUID | None:
    cached = state.room_defaults.get(room_id)
    if cached is None or isinstance(cached, uuid.UUID):
        return cached
    from switchboard.groups.service import room_default_economy

    found = await room_default_economy(sessions(), room_id)
    state.room_defaults.put(room_id, found)
    return found


async def resolve_economy(
    sessions: SessionOnDemand,
    principal: Principal,
    header_value: str | None,
    agent_economy_id: uuid.UUID | None,
    room_id: uuid.UUID | None,
) -> Economy:
    """`X-Economy-Id` (caller must participate: 403; unknown: 404), else the agent's economy, else
    the room's default economy, else the config's default economy.
    """
    state = _state_for(sessions.engine)
    if header_value is not None and header_value.strip():
        economy = await _economy(sessions, state, header_value.strip())
        if not await _participates(sessions, state, economy, principal):
            raise Forbidden("you do not participate in this economy", param="X-Economy-Id")
        return economy
    if agent_economy_id is not None:
        return await _economy(sessions, state, str(agent_economy_id))
    if room_id is not None:
        room_economy = await _room_default(sessions, state, room_id)
        if room_economy is not None:
            return await _economy(sessions, state, str(room_economy))
    if state.default is not None:
        return state.default
    return await _economy(sessions, state, DEFAULT_SLUG)
